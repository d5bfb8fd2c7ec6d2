// Where one training step's phases and gradient all-reduces lay on the device: times in seconds from
// the step's start event (CUDA events on the compute and communication streams), and how they split
// the step into phases. The split is host arithmetic, so that it can be tested without a GPU.
#pragma once
#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "metrics/step_phases.h"

namespace sb {

// The compute stream's phase boundaries after the step's start, in step order.
enum StepBoundary { kDataEnd = 0, kForwardEnd, kBackwardEnd, kCommEnd, kOptimizerEnd, kStepBoundaries };

// One gradient bucket of the step. The communication stream runs buckets one after another, so a
// bucket is busy from when it is ready and the one before it is done until its own end.
struct BucketSpan {
  double ready_s = 0;   // its gradients are final (on the stream that reported them)
  double start_s = 0;   // the communication stream takes it up: max(ready, the end of that stream's work for
                        // the bucket before: its all-reduce, or the optimizer update queued after it)
  double end_s = 0;     // its all-reduce is done, on the communication stream; = start where nothing is
                        // exchanged
  int64_t bytes = 0;    // on the wire
};

struct StepTimeline {
  // The step's start on the host's steady clock (seconds since its epoch), through the engine's
  // host/device anchor; NaN where the engine has no device timeline (the CPU engine).
  double start_s = std::numeric_limits<double>::quiet_NaN();
  std::array<double, kStepBoundaries> ends{};  // by StepBoundary, seconds after the start
  std::vector<BucketSpan> buckets;             // in launch order
  bool on_device() const { return start_s == start_s; }
};

// Completes each bucket's start from the ready and end times (the communication stream is serial).
void set_bucket_starts(std::vector<BucketSpan>& buckets);

// How much of [begin, end] the buckets' busy spans cover (they do not overlap one another).
double busy_seconds_within(double begin, double end, std::span<const BucketSpan> buckets);

// The step's phases (by Phase): backward_overlap is the backward during which a bucket was busy,
// backward the rest, comm the compute stream's wait after backward; together they make the step.
std::array<double, kPhaseCount> phase_seconds(const StepTimeline& step);

// The rank's arrival at the step's last collective (PhaseTimes::arrival_s, for the straggler's rule),
// seconds after the step's start: the latest bucket's ready time, or the end of backward where the step
// has no buckets.
double arrival_seconds(const StepTimeline& step);

// Each bucket's ready time after the start of backward (the end of forward), seconds.
std::vector<double> ready_after_backward_start(const StepTimeline& step);

}  // namespace sb
