#include "kernels/device_utils.cuh"
#include "kernels/k_slice_sum.h"

namespace sb::kernels {
namespace {

// One thread per output element; consecutive threads take consecutive rows, so each slice is read in
// coalesced runs.
template <typename T>
__global__ void sum_k_slices_kernel(const float* __restrict__ partials, int slices, int64_t m, int64_t n,
                                    T* __restrict__ d, int64_t ldd, const T* __restrict__ bias, bool relu) {
  const int64_t count = m * n;
  for (int64_t e = detail::global_thread(); e < count; e += detail::grid_threads()) {
    float sum = 0.0f;
    for (int p = 0; p < slices; ++p) sum += partials[p * count + e];
    const int64_t i = e % m, j = e / m;
    if (bias) sum += detail::to_float(bias[i]);
    if (relu) sum = fmaxf(sum, 0.0f);
    d[i + j * ldd] = detail::from_float<T>(sum);
  }
}

}  // namespace

void sum_k_slices(const float* partials, int slices, int64_t m, int64_t n, void* d, int64_t ldd, DType out,
                  const void* bias, bool relu, cudaStream_t stream) {
  if (slices < 1 || ldd < m) fatal("sum_k_slices: needs at least one slice and ldd >= m");
  if (m <= 0 || n <= 0) return;
  detail::dispatch_dtype(out, [&](auto tag) {
    using T = typename decltype(tag)::type;
    sum_k_slices_kernel<T><<<detail::grid_for(m * n), detail::kThreads, 0, stream>>>(
        partials, slices, m, n, static_cast<T*>(d), ldd, static_cast<const T*>(bias), relu);
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
