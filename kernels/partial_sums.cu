#include "kernels/device_utils.cuh"
#include "kernels/partial_sums.h"

namespace sb::kernels {
namespace {

constexpr int kWarp = 32;

// One warp per column: lane l adds rows l, l + 32, ... in order, then the lanes' sums meet in a fixed
// shuffle tree. Every load of a lane is independent of its sum, so the rows are read in parallel rather
// than one dependent load after another; the order of the additions is the same every run.
__global__ void sum_partial_rows_kernel(const float* partials, int64_t rows, int64_t cols, float* out) {
  const int64_t j = detail::global_thread() / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (j >= cols) return;  // the whole warp leaves together: j is the same for its 32 lanes
  double sum = 0.0;
  for (int64_t b = lane; b < rows; b += kWarp) sum += partials[b * cols + j];
  for (int offset = kWarp / 2; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) out[j] = static_cast<float>(sum);
}

}  // namespace

void sum_partial_rows(const float* partials, int64_t rows, int64_t cols, float* out, cudaStream_t stream) {
  if (cols <= 0) return;
  const int64_t threads = cols * kWarp;
  const unsigned int blocks = static_cast<unsigned int>((threads + detail::kThreads - 1) / detail::kThreads);
  sum_partial_rows_kernel<<<blocks, detail::kThreads, 0, stream>>>(partials, rows, cols, out);
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
