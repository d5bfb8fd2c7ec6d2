#include "kernels/device_utils.cuh"
#include "kernels/partial_sums.h"

namespace sb::kernels {
namespace {

__global__ void sum_partial_rows_kernel(const float* partials, int64_t rows, int64_t cols, float* out) {
  const int64_t j = detail::global_thread();
  if (j >= cols) return;
  double sum = 0.0;
  for (int64_t b = 0; b < rows; ++b) sum += partials[b * cols + j];
  out[j] = static_cast<float>(sum);
}

}  // namespace

void sum_partial_rows(const float* partials, int64_t rows, int64_t cols, float* out, cudaStream_t stream) {
  if (cols <= 0) return;
  const unsigned int blocks = static_cast<unsigned int>((cols + detail::kThreads - 1) / detail::kThreads);
  sum_partial_rows_kernel<<<blocks, detail::kThreads, 0, stream>>>(partials, rows, cols, out);
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
