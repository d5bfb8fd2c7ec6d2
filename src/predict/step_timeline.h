// One data-parallel training step as a timeline: data and forward, then backward, during which each
// gradient bucket's all-reduce starts once the bucket is ready and the one communication stream is free
// (buckets in their fixed order), then the optimizer once every all-reduce has finished. Exposed
// communication is what the all-reduces leave after backward ends.
#pragma once
#include <vector>

namespace sb::predict {

// The compute of one step on one GPU, in seconds.
struct StepCompute {
  double before_backward_s = 0;  // data, forward and loss (and whatever else precedes backward)
  double backward_s = 0;
  double optimizer_s = 0;
  double total() const { return before_backward_s + backward_s + optimizer_s; }
};

struct BucketComm {
  double ready_fraction = 0;  // of backward, when the bucket's gradients are final
  double seconds = 0;         // its all-reduce
};

struct StepTimeline {
  double step_s = 0;
  double exposed_comm_s = 0;
  double comm_s = 0;  // all the all-reduces, hidden or not
};

StepTimeline simulate_step(const StepCompute& compute, const std::vector<BucketComm>& buckets);

}  // namespace sb::predict
