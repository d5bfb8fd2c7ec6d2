#include "train/reporting/gpu_clocks_observer.h"

namespace sb {

void GpuClocksObserver::measure_epoch(EpochSummary& s) {
  s.clocks = reduce_epoch_clocks(comm_, trained_);
  if (s.steps == s.steps_resumed) s.clocks = EpochClocks{};  // a window without a step says nothing of the clocks under load
}

}  // namespace sb
