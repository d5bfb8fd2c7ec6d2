// The compute of one step on one GPU as a function of the per-GPU batch, from the 1-GPU points a study
// measured (its batch-size sweep): each part of the step, per sample, linear in the batch between the
// measured batch sizes. Strong scaling needs it at the smaller per-GPU batches; weak scaling at one.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "predict/step_timeline.h"

namespace sb::predict {

struct ComputePoint {
  int64_t batch = 0;  // per GPU
  StepCompute compute;
};

class ComputeProfile {
 public:
  // Throws std::invalid_argument for no points, a batch below 1 or two points of one batch.
  explicit ComputeProfile(std::vector<ComputePoint> points);
  // nullopt outside [smallest, largest] measured batch: the model does not extrapolate compute.
  std::optional<StepCompute> at(double batch) const;
  int64_t smallest_batch() const { return points_.front().batch; }
  int64_t largest_batch() const { return points_.back().batch; }
  const std::vector<ComputePoint>& points() const { return points_; }

 private:
  std::vector<ComputePoint> points_;  // ascending batch
};

}  // namespace sb::predict
