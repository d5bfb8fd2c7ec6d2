// The batch-norm inference coefficients (see batchnorm.h): C elements, so one small launch each.
#include "kernels/batchnorm.h"

#include "core/cuda_check.h"

namespace sb::kernels {
namespace {
__global__ void inverse_std_kernel(const float* var, float* inv_std, int64_t c, float eps) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < c) inv_std[i] = 1.0f / sqrtf(var[i] + eps);  // as the CPU's 1/sqrt(var+eps), not rsqrtf's approximation
}
__global__ void coefficients_kernel(const float* scale, const float* bias, const float* mean, const float* var,
                                    float eps, float* a, float* b, int64_t c) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= c) return;
  const float ai = scale[i] / sqrtf(var[i] + eps);
  a[i] = ai;
  b[i] = bias[i] - mean[i] * ai;
}
}  // namespace

void bn_inference_coefficients(const float* scale, const float* bias, const float* mean, const float* var, float eps,
                               float* a, float* b, int64_t c, cudaStream_t stream) {
  if (c <= 0) return;
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>((c + threads - 1) / threads);
  coefficients_kernel<<<blocks, threads, 0, stream>>>(scale, bias, mean, var, eps, a, b, c);
  CHECK_CUDA_LAUNCH();
}

void bn_inverse_std(const float* var, float* inv_std, int64_t c, float eps, cudaStream_t stream) {
  if (c <= 0) return;
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>((c + threads - 1) / threads);
  inverse_std_kernel<<<blocks, threads, 0, stream>>>(var, inv_std, c, eps);
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
