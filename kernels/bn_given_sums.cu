// The batch-norm passes' steps that take sums a convolution computed (see bn_fused.h): bn_finalize_sums and
// bn_backward_sums_from_gradients, one thread per channel, in double as the fused passes' combine.
#include <string>

#include "core/cuda_check.h"
#include "core/error.h"
#include "kernels/bn_fused.h"
#include "kernels/bn_fused_detail.cuh"

namespace sb::kernels {
namespace {

__global__ void finalize_sums_kernel(const float* sum, const float* sqsum, BnFinalize f, int64_t c, double count) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const detail::ChannelMoments m = detail::moments_from_sums(sum, sqsum, ch, count);
  detail::bn_finalize_channel(f, ch, m.mean, m.var, count);
}

__global__ void backward_sums_kernel(const float* dscale, const float* dbias, const float* inv_std, detail::Workspace ws,
                                     int64_t c) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  ws.sums[ch] = dbias[ch];                                     // sum g
  ws.sums[c + ch] = static_cast<double>(dscale[ch]) / inv_std[ch];  // sum g * (x - mean)
}

constexpr int kThreads = 128;
unsigned blocks_for(int64_t c) { return static_cast<unsigned>((c + kThreads - 1) / kThreads); }

}  // namespace

void bn_finalize_sums(const BnFusedShape& s, const float* sum, const float* sqsum, const BnFinalize& f,
                      cudaStream_t stream) {
  const int64_t count = s.n * s.h * s.w;
  if (s.c <= 0 || count <= 1)
    fatal("bn_finalize_sums: needs more than one value per channel, got " + std::to_string(count));
  finalize_sums_kernel<<<blocks_for(s.c), kThreads, 0, stream>>>(sum, sqsum, f, s.c, static_cast<double>(count));
  CHECK_CUDA_LAUNCH();
}

void bn_backward_sums_from_gradients(const BnFusedShape& s, const float* dscale, const float* dbias,
                                     const float* saved_inv_std, void* workspace, cudaStream_t stream) {
  if (s.c <= 0) fatal("bn_backward_sums_from_gradients: no channels");
  backward_sums_kernel<<<blocks_for(s.c), kThreads, 0, stream>>>(dscale, dbias, saved_inv_std, detail::carve(workspace, s.c),
                                                                 s.c);
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
