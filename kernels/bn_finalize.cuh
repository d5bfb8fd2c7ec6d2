// The batch norm's per-channel finalize, shared by every source of the batch's statistics (the fused
// statistics pass, a convolution's epilogue sums): the saved mean and 1/sqrt(var + eps) for backward,
// PyTorch's running update (unbiased variance), and the apply coefficients y = x * a + b.
#pragma once
#include <cstdint>

#include "kernels/bn_fused.h"

namespace sb::kernels::detail {

// mean and var (biased) over `count` values of channel ch.
__device__ inline void bn_finalize_channel(const BnFinalize& f, int64_t ch, double mean, double var, double count) {
  const float inv_std = 1.0f / sqrtf(static_cast<float>(var) + f.eps);  // as the CPU's 1/sqrt(var + eps)
  f.saved_mean[ch] = static_cast<float>(mean);
  f.saved_inv_std[ch] = inv_std;
  const double m = f.momentum;
  f.running_mean[ch] = static_cast<float>((1.0 - m) * f.running_mean[ch] + m * mean);
  f.running_var[ch] = static_cast<float>((1.0 - m) * f.running_var[ch] + m * var * count / (count - 1.0));
  const float a = f.scale[ch] * inv_std;
  f.a[ch] = a;
  f.b[ch] = f.bias[ch] - static_cast<float>(mean) * a;
}

}  // namespace sb::kernels::detail
