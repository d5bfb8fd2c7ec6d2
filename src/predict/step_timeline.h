// One data-parallel training step as a timeline: data and forward, then backward, during which each
// gradient bucket's all-reduce starts once the bucket is ready and the one communication stream is free
// (buckets in their fixed order), then the optimizer once every all-reduce has finished. Exposed
// communication is what the all-reduces leave after backward ends.
//
// Backward beside an all-reduce: NCCL's kernels take SMs and memory bandwidth from backward, so while an
// all-reduce runs backward advances at 1 / (1 + contention) of its speed alone. A bucket is ready after a
// fraction of backward's *work*, so slowing backward moves the later buckets' ready times too.
#pragma once
#include <vector>

namespace sb::predict {

// The compute of one step on one GPU, in seconds.
struct StepCompute {
  double before_backward_s = 0;  // data, forward and loss (and whatever else precedes backward)
  double backward_s = 0;
  double optimizer_s = 0;
  double total() const { return before_backward_s + backward_s + optimizer_s; }
  // Backward by its own factor, the rest by `outside` (compute_factor.h).
  StepCompute scaled(double outside, double backward) const {
    return {before_backward_s * outside, backward_s * backward, optimizer_s * outside};
  }
};

struct BucketComm {
  double ready_fraction = 0;  // of backward's work, when the bucket's gradients are final
  double seconds = 0;         // its all-reduce, as the sweep measured it alone
};

// How an all-reduce and backward interact when they run at the same time (docs/prediction.md, "The
// multi-GPU calibration"); the defaults are no interaction.
struct Overlap {
  double contention = 0;  // backward takes (1 + contention) times as long while an all-reduce runs beside it
  double comm_scale = 1;  // the training's all-reduces take this times the sweep's time
  // Per step, after backward: what the step waits beyond the all-reduces the sweep times (the slowest
  // rank's last kernels, the last all-reduce's launch and hand-shake), exposed whatever the timeline hides.
  double wait_s = 0;
};

struct StepTimeline {
  double step_s = 0;
  double exposed_comm_s = 0;  // the wait included
  double comm_s = 0;        // all the all-reduces, hidden or not
  double contention_s = 0;  // what backward lost to the all-reduces beside it
};

StepTimeline simulate_step(const StepCompute& compute, const std::vector<BucketComm>& buckets, const Overlap& overlap = {});

}  // namespace sb::predict
