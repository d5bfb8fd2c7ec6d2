#include "train/reporting/input_pipeline_observer.h"

#include <span>

#include "train/run/run_summary.h"

namespace sb {

void InputPipelineObserver::measure_epoch(EpochSummary& s) {
  const std::optional<InputTotals> now = measurements_.input_totals();
  if (!now || !before_) return;  // every rank reads the same kind of data: all return here, or none
  const InputTotals epoch = *now - *before_;
  before_ = now;
  double v[] = {epoch.read_seconds, epoch.decode_seconds, epoch.augment_seconds, epoch.copy_seconds, static_cast<double>(epoch.bytes),
                static_cast<double>(epoch.images), static_cast<double>(epoch.skipped), static_cast<double>(epoch.cpu_fallbacks)};
  comm_.allreduce_sum(std::span<double>(v));
  const InputTotals sum{v[0], v[1], v[2], v[3], static_cast<int64_t>(v[4]), static_cast<int64_t>(v[5]), static_cast<int64_t>(v[6]),
                        static_cast<int64_t>(v[7])};
  s.input = sum;
}

}  // namespace sb
