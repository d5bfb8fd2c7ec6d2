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

// The apply coefficients y = x * a + b of channel ch from its batch mean and (biased) variance.
struct ApplyCoefficients {
  float inv_std, a, b;
};
__device__ inline ApplyCoefficients bn_apply_coefficients(const BnFinalize& f, int64_t ch, double mean, double var) {
  ApplyCoefficients k;
  k.inv_std = 1.0f / sqrtf(static_cast<float>(var) + f.eps);  // as the CPU's 1/sqrt(var + eps)
  k.a = f.scale[ch] * k.inv_std;
  k.b = f.bias[ch] - static_cast<float>(mean) * k.a;
  return k;
}

// The batch mean and (biased) variance of channel ch from the unshifted sums of x and x^2 a convolution gave.
struct ChannelMoments {
  double mean, var;
};
__device__ inline ChannelMoments moments_from_sums(const float* sum, const float* sqsum, int64_t ch, double count) {
  const double mean = static_cast<double>(sum[ch]) / count;
  return ChannelMoments{mean, fmax(static_cast<double>(sqsum[ch]) / count - mean * mean, 0.0)};
}

// mean and var (biased) over `count` values of channel ch. Returns the coefficients it stored.
__device__ inline ApplyCoefficients bn_finalize_channel(const BnFinalize& f, int64_t ch, double mean, double var,
                                                        double count) {
  const ApplyCoefficients k = bn_apply_coefficients(f, ch, mean, var);
  f.saved_mean[ch] = static_cast<float>(mean);
  f.saved_inv_std[ch] = k.inv_std;
  const double m = f.momentum;
  f.running_mean[ch] = static_cast<float>((1.0 - m) * f.running_mean[ch] + m * mean);
  f.running_var[ch] = static_cast<float>((1.0 - m) * f.running_var[ch] + m * var * count / (count - 1.0));
  f.a[ch] = k.a;
  f.b[ch] = k.b;
  if (f.neg_mean) f.neg_mean[ch] = static_cast<float>(-mean);
  return k;
}

}  // namespace sb::kernels::detail
