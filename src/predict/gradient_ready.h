// When each part of the flat gradient buffer is final during backward, as a fraction of the backward
// phase: backward runs from the last layer to the first, so the gradients at high offsets are final
// first. A bucket of the training's plan (train/engines/bucket_plan.h) can start its all-reduce when its lowest
// element is final.
//
// Two sources, one form: recorded ready times of the buckets of a measured plan, or, where none were
// recorded, the model's per-layer backward FLOPs (a layer's gradients are final once backward has done
// the FLOPs of every layer from the last one through it).
#pragma once
#include <cstdint>
#include <vector>

#include "nn/flops.h"
#include "nn/spec.h"
#include "train/engines/bucket_plan.h"

namespace sb::predict {

class GradientReadyCurve {
 public:
  struct Point {
    int64_t offset = 0;    // the elements from here to the end of the buffer ...
    double fraction = 0;   // ... are final after this fraction of backward
  };
  // `points` in any order; the end of the buffer (`total_elements`, fraction 0) is added.
  GradientReadyCurve(std::vector<Point> points, int64_t total_elements);

  // From per-layer forward FLOPs (nn/flops.h) and the parameters (collect_params). Backward of a layer
  // costs twice its forward (data and weight gradients), so the forward counts give the same shares.
  // Parameters of layers without FLOPs (BN) are final at the share backward has reached when it passes
  // them.
  static GradientReadyCurve from_layer_flops(const std::vector<LayerFlops>& layers, const std::vector<ParamSpec>& params);
  // From recorded ready times of `buckets` (seconds from the start of backward, in the buckets' order)
  // and the backward time they are a part of.
  static GradientReadyCurve from_recorded(const std::vector<Bucket>& buckets, const std::vector<double>& ready_s,
                                          double backward_s, int64_t total_elements);

  // The fraction of backward after which every element at `offset` and above is final: linear between
  // the known points.
  double fraction_at(int64_t offset) const;
  std::vector<double> bucket_ready_fractions(const std::vector<Bucket>& buckets) const;

 private:
  std::vector<Point> points_;  // ascending offset, fraction not increasing
};

}  // namespace sb::predict
