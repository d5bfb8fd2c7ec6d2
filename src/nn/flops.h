// Model FLOPs of a spec, for throughput in TFLOP/s and MFU (model FLOPs utilisation). Counts the
// multiply-adds of convolutions and linear layers as 2 FLOPs each (the convention of MFU figures);
// elementwise layers, pooling and BN are left out. Training costs 3x forward (forward, data gradient,
// weight gradient), which gives the WRN's 14.47 GFLOP per 32x32 image
// (docs/performance.md, MFU).
#pragma once
#include <cstdint>

#include "nn/spec.h"

namespace sb {
// Forward FLOPs for one sample of shape C x H x W.
double forward_flops_per_sample(const LayerSpec& spec, const Shape& sample_chw);
inline double training_flops_per_sample(const LayerSpec& spec, const Shape& sample_chw) {
  return 3.0 * forward_flops_per_sample(spec, sample_chw);
}
}  // namespace sb
