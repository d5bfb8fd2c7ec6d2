// Model FLOPs of a spec, for throughput in TFLOP/s and MFU (model FLOPs utilisation). Counts the
// multiply-adds of convolutions and linear layers as 2 FLOPs each (the convention of MFU figures);
// elementwise layers, pooling and BN are left out. Training costs 3x forward (forward, data gradient,
// weight gradient), which gives the WRN's 14.47 GFLOP per 32x32 image
// (docs/performance.md, MFU).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nn/spec.h"

namespace sb {
// Forward FLOPs for one sample of shape C x H x W.
double forward_flops_per_sample(const LayerSpec& spec, const Shape& sample_chw);
inline double training_flops_per_sample(const LayerSpec& spec, const Shape& sample_chw) {
  return 3.0 * forward_flops_per_sample(spec, sample_chw);
}

// The forward FLOPs of each leaf layer for one sample, in depth-first order (the order of
// collect_params), layers without FLOPs included: where in backward each parameter's gradient is final.
struct LayerFlops {
  std::string name;  // the layer's dotted name, the prefix of its parameters' names
  double forward_flops = 0;
};
std::vector<LayerFlops> forward_flops_per_layer(const LayerSpec& spec, const Shape& sample_chw);
}  // namespace sb
