#include "train/cuda/step_timer.h"

namespace sb::cuda {
namespace {

constexpr double kSecondsPerMillisecond = 1e-3;  // cudaEventElapsedTime reports milliseconds

struct PhaseSpan {
  Phase phase;
  StepEvent begin, end;
};
// Exposed communication is the compute stream's wait for the last bucket (backward done to comm done).
constexpr PhaseSpan kPhaseSpans[] = {{kPhaseData, kStepStart, kDataDone},
                                     {kPhaseForward, kDataDone, kForwardDone},
                                     {kPhaseBackward, kForwardDone, kBackwardDone},
                                     {kPhaseComm, kBackwardDone, kCommDone},
                                     {kPhaseOptimizer, kCommDone, kOptimizerDone}};

}  // namespace

StepTimer::StepTimer() {
  for (auto& slot : events_)
    for (auto& e : slot) e = CudaEvent::create();
}

void StepTimer::record(int slot, StepEvent event, cudaStream_t stream, bool capturing) const {
  const CudaEvent& e = events_[static_cast<size_t>(slot)][static_cast<size_t>(event)];
  if (capturing) {
    e.record_external(stream);
  } else {
    e.record(stream);
  }
}

PhaseTimes StepTimer::read(int slot, const GpuWait& wait) const {
  const auto& ev = events_[static_cast<size_t>(slot)];
  wait.for_event(ev[kOptimizerDone]);
  PhaseTimes t;
  for (const PhaseSpan& span : kPhaseSpans) {
    t.seconds[span.phase] = CudaEvent::elapsed_ms(ev[span.begin], ev[span.end]) * kSecondsPerMillisecond;
  }
  return t;
}

PhaseTimes StepTimer::queued(int slot, const GpuWait& wait) {
  PhaseTimes previous;
  previous.valid = false;
  if (pending_) previous = read(pending_slot_, wait);
  pending_ = true;
  pending_slot_ = slot;
  return previous;
}

PhaseTimes StepTimer::drain(const GpuWait& wait) {
  PhaseTimes t;
  t.valid = false;
  if (pending_) t = read(pending_slot_, wait);
  pending_ = false;
  return t;
}

}  // namespace sb::cuda
