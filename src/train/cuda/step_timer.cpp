#include "train/cuda/step_timer.h"

#include <chrono>
#include <utility>


namespace sb::cuda {
namespace {

constexpr double kSecondsPerMillisecond = 1e-3;  // cudaEventElapsedTime reports milliseconds

// The compute stream's boundaries after the step's start event, in step order.
constexpr std::array<std::pair<StepBoundary, StepEvent>, kStepBoundaries> kBoundaryEvents = {
    {{kDataEnd, kDataDone}, {kForwardEnd, kForwardDone}, {kBackwardEnd, kBackwardDone}, {kCommEnd, kCommDone},
     {kOptimizerEnd, kOptimizerDone}}};

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

StepTimer::StepTimer(const GradientBuckets* buckets) : buckets_(buckets) {
  for (auto& slot : events_)
    for (auto& e : slot) e = CudaEvent::create();
  anchor_ = CudaEvent::create();
}

void StepTimer::record(int slot, StepEvent event, cudaStream_t stream, bool capturing) const {
  events_[static_cast<size_t>(slot)][static_cast<size_t>(event)].record_maybe_captured(stream, capturing);
}

void StepTimer::anchor(cudaStream_t stream) {
  // On an idle stream the event runs as soon as it is queued: between the two clock readings, whose
  // midpoint stands for it (a few microseconds either way).
  const double before = steady_seconds();
  anchor_.record(stream);
  anchor_.synchronize();
  anchor_host_s_ = 0.5 * (before + steady_seconds());
  anchored_ = true;
}

PhaseTimes StepTimer::read(int slot, const GpuWait& wait) const {
  const auto& ev = events_[static_cast<size_t>(slot)];
  wait.for_event(ev[kOptimizerDone]);  // the compute stream waited for every bucket before it
  PhaseTimes t;
  StepTimeline& line = t.timeline;
  for (const auto& [boundary, event] : kBoundaryEvents)
    line.ends[boundary] = CudaEvent::elapsed_ms(ev[kStepStart], ev[event]) * kSecondsPerMillisecond;
  if (buckets_) line.buckets = buckets_->read_times(slot, ev[kStepStart]);
  const std::array<double, kPhaseCount> seconds = phase_seconds(line);
  for (int p = 0; p < kPhaseCount; ++p) t.seconds[p] = seconds[static_cast<size_t>(p)];
  if (anchored_) line.start_s = anchor_host_s_ + CudaEvent::elapsed_ms(anchor_, ev[kStepStart]) * kSecondsPerMillisecond;
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
