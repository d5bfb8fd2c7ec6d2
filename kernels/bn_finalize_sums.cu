// bn_finalize_sums (see bn_fused.h): one thread per channel, in double, as the fused statistics' combine.
#include <string>

#include "core/cuda_check.h"
#include "core/error.h"
#include "kernels/bn_finalize.cuh"
#include "kernels/bn_fused.h"

namespace sb::kernels {
namespace {

__global__ void finalize_sums_kernel(const float* sum, const float* sqsum, BnFinalize f, int64_t c, double count) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const double mean = static_cast<double>(sum[ch]) / count;
  const double var = fmax(static_cast<double>(sqsum[ch]) / count - mean * mean, 0.0);
  detail::bn_finalize_channel(f, ch, mean, var, count);
}

}  // namespace

void bn_finalize_sums(const BnFusedShape& s, const float* sum, const float* sqsum, const BnFinalize& f,
                      cudaStream_t stream) {
  const int64_t count = s.n * s.h * s.w;
  if (s.c <= 0 || count <= 1)
    fatal("bn_finalize_sums: needs more than one value per channel, got " + std::to_string(count));
  constexpr int kThreads = 128;
  const auto blocks = static_cast<unsigned>((s.c + kThreads - 1) / kThreads);
  finalize_sums_kernel<<<blocks, kThreads, 0, stream>>>(sum, sqsum, f, s.c, static_cast<double>(count));
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
