#include "train/engines/cuda/step_timer.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "core/cuda_check.h"

namespace sb::cuda {
namespace {

constexpr size_t kAnchor = static_cast<size_t>(kStepSlots) * kStepEvents;  // the anchor's timestamp

// The compute stream's boundaries after the step's start event, in step order.
constexpr std::array<std::pair<StepBoundary, StepEvent>, kStepBoundaries> kBoundaryEvents = {
    {{kDataEnd, kDataDone}, {kForwardEnd, kForwardDone}, {kBackwardEnd, kBackwardDone}, {kCommEnd, kCommDone},
     {kOptimizerEnd, kOptimizerDone}}};

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

StepTimer::StepTimer(const GradientSync& sync)
    : sync_(sync), updates_follow_allreduces_(sync.updates_parameters()), stamps_(kAnchor + 1) {
  for (auto& e : done_) e = CudaEvent::create(cudaEventDisableTiming);
}

void StepTimer::record(int slot, StepEvent event, cudaStream_t stream, bool capturing) const {
  // With queued updates read() takes the end of communication from the buckets' timestamps: a stamp of its
  // own would only lengthen the step's tail (each is a kernel node on the compute stream).
  if (event == kCommDone && updates_follow_allreduces_) return;
  stamps_.record(index(slot, event), stream);
  if (event == kOptimizerDone) done_[static_cast<size_t>(slot)].record_maybe_captured(stream, capturing);
}

void StepTimer::anchor(cudaStream_t stream) {
  // On an idle stream the timestamp is taken as soon as it is queued: between the two clock readings,
  // whose midpoint stands for it (a few microseconds either way).
  const double before = steady_seconds();
  stamps_.record(kAnchor, stream);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  anchor_host_s_ = 0.5 * (before + steady_seconds());
  anchored_ = true;
}

PhaseTimes StepTimer::read(int slot, const GpuWait& wait) const {
  wait.for_event(done_[static_cast<size_t>(slot)]);  // the compute stream waited for every bucket before it
  const size_t start = index(slot, kStepStart);
  PhaseTimes t;
  StepTimeline& line = t.timeline;
  for (const auto& [boundary, event] : kBoundaryEvents) line.ends[boundary] = stamps_.seconds(start, index(slot, event));
  line.buckets = sync_.read_times(slot, stamps_.ns(start));
  t.arrival_s = arrival_seconds(line);
  if (updates_follow_allreduces_) {
    // The compute stream waited for the updates too: communication ends with the last all-reduce (or with
    // backward), and what the updates held the step beyond it counts as the optimizer's.
    double reduced = line.ends[kBackwardEnd];
    for (const BucketSpan& b : line.buckets) reduced = std::max(reduced, b.end_s);
    line.ends[kCommEnd] = std::min(reduced, line.ends[kOptimizerEnd]);
  }
  const std::array<double, kPhaseCount> seconds = phase_seconds(line);
  for (int p = 0; p < kPhaseCount; ++p) t.seconds[p] = seconds[static_cast<size_t>(p)];
  if (anchored_) line.start_s = anchor_host_s_ + stamps_.seconds(kAnchor, start);
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
