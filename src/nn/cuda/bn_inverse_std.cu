// The one kernel of the layer code: the BN inference graph takes 1/sqrt(var + eps), and nothing in
// kernels/ computes it from the running variance. C elements, so one small launch.
#include "core/cuda_check.h"
#include "nn/cuda/bn_ops.h"

namespace sb::cuda {
namespace {
__global__ void inverse_std_kernel(const float* var, float* inv_std, int64_t c, float eps) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < c) inv_std[i] = 1.0f / sqrtf(var[i] + eps);  // as the CPU's 1/sqrt(var+eps), not rsqrtf's approximation
}
}  // namespace

void bn_inverse_std(const float* var, float* inv_std, int64_t c, float eps, cudaStream_t stream) {
  if (c <= 0) return;
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>((c + threads - 1) / threads);
  inverse_std_kernel<<<blocks, threads, 0, stream>>>(var, inv_std, c, eps);
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::cuda
