#include "kernels/device_utils.cuh"
#include "kernels/relu_dropout.h"

namespace sb::kernels {
namespace {
using namespace detail;

template <typename T>
__global__ void relu_dropout_backward_kernel(const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dx,
                                             int64_t n, float scale) {
  for (int64_t i = global_thread(); i < n; i += grid_threads())
    dx[i] = to_float(y[i]) > 0.0f ? from_float<T>(to_float(dy[i]) * scale) : from_float<T>(0.0f);
}

}  // namespace

void relu_dropout_backward_from_output(const void* y, const void* dy, void* dx, int64_t n, float scale, DType dtype,
                                       cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    relu_dropout_backward_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), n, scale);
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
