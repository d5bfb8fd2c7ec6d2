// The synthetic step model the predict tests calibrate and check against: four tensors of 1000 gradients,
// final after 20%, 45%, 70% and 100% of backward (the last layer's first), a 1-GPU compute of 20 ms before
// backward, 50 ms backward and 10 ms optimizer at one batch, and a ring slow enough that the all-reduces
// take a sizeable share of backward.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "predict/scaling_prediction.h"

namespace sb::predict::testing {

constexpr StepCompute kSyntheticCompute{0.02, 0.05, 0.01};

inline StepModel overlapping_model(int64_t batch) {
  std::vector<ParamSpec> params(4);
  for (int i = 0; i < 4; ++i) {
    params[i].name = std::to_string(i) + ".weight";
    params[i].shape = Shape{1000};
    params[i].offset = 1000 * i;
  }
  GradientReadyCurve ready({{0, 1.0}, {1000, 0.7}, {2000, 0.45}, {3000, 0.2}}, 4000);
  AllreduceModel allreduce;
  allreduce.intra = RingLevel{2e-4, 4e8};
  return StepModel{ComputeProfile(std::vector<ComputePoint>{{batch, kSyntheticCompute}}), params, ready, allreduce, 4.0, true, {}};
}

}  // namespace sb::predict::testing
