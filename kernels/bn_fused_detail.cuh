// What the fused batch-norm passes (bn_fused.cu) share with the passes that take sums a convolution
// computed (bn_given_sums.cu): the workspace's layout, and the per-channel finalize of the forward
// statistics (the saved mean and 1/sqrt(var + eps) for backward, PyTorch's running update with the unbiased
// variance, and the apply coefficients y = x * a + b).
#pragma once
#include <cstdint>

#include "kernels/bn_fused.h"

namespace sb::kernels::detail {

// The workspace (bn_fused_workspace_bytes): double sums[2c] | float shift[c] | float partials[rows][2c].
struct Workspace {
  double* sums;
  float* shift;
  float* partials;
};
__host__ __device__ inline Workspace carve(void* base, int64_t c) {
  Workspace w;
  w.sums = static_cast<double*>(base);
  w.shift = reinterpret_cast<float*>(w.sums + 2 * c);
  w.partials = w.shift + c;
  return w;
}

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
  if (f.neg_mean) f.neg_mean[ch] = static_cast<float>(-mean);
}

}  // namespace sb::kernels::detail
