// Loss-scaling kernels (see amp.h). The flag is only ever set to 1 by these kernels (a benign race: every
// writer writes the same value), one store per warp that saw a non-finite value.
#include "kernels/amp.h"

#include "kernels/device_utils.cuh"

namespace sb::kernels {
namespace {
using namespace detail;

__device__ __forceinline__ void flag_if_any(bool bad, int32_t* found_inf) {
  if (__any_sync(0xffffffffu, bad) && (threadIdx.x & 31) == 0) *found_inf = 1;
}

template <typename T, bool Vector>
__global__ void check_finite_kernel(const T* __restrict__ x, int64_t n, int32_t* found_inf) {
  bool bad = false;
  int64_t start = 0;
  if constexpr (Vector) {
    const int64_t packs = n / kPackElems;
    for (int64_t p = global_thread(); p < packs; p += grid_threads()) {
      const Pack<T, kPackElems> v = reinterpret_cast<const Pack<T, kPackElems>*>(x)[p];
#pragma unroll
      for (int j = 0; j < kPackElems; ++j) bad |= !isfinite(to_float(v.v[j]));
    }
    start = packs * kPackElems;
  }
  for (int64_t i = start + global_thread(); i < n; i += grid_threads()) bad |= !isfinite(to_float(x[i]));
  flag_if_any(bad, found_inf);
}

template <bool Vector>
__global__ void unscale_and_check_kernel(float* grads, int64_t n, const float* scale, int32_t* found_inf) {
  const float inv = static_cast<float>(1.0 / static_cast<double>(*scale));
  bool bad = false;
  int64_t start = 0;
  if constexpr (Vector) {
    const int64_t quads = n / 4;
    for (int64_t q = global_thread(); q < quads; q += grid_threads()) {
      float4 v = reinterpret_cast<float4*>(grads)[q];
      bad |= !isfinite(v.x) || !isfinite(v.y) || !isfinite(v.z) || !isfinite(v.w);
      v.x *= inv;
      v.y *= inv;
      v.z *= inv;
      v.w *= inv;
      reinterpret_cast<float4*>(grads)[q] = v;
    }
    start = quads * 4;
  }
  for (int64_t i = start + global_thread(); i < n; i += grid_threads()) {
    const float v = grads[i];
    bad |= !isfinite(v);
    grads[i] = v * inv;
  }
  flag_if_any(bad, found_inf);
}

// torch's _amp_update_scale_ (aten/src/ATen/native/cuda/AmpKernels.cu), then the flag is cleared.
__global__ void update_loss_scale_kernel(LossScaleState* s, float growth_factor, float backoff_factor,
                                         int growth_interval) {
  if (s->found_inf != 0) {
    s->scale *= backoff_factor;
    s->growth_tracker = 0;
  } else {
    const int32_t successful = s->growth_tracker + 1;
    if (successful == growth_interval) {
      const float grown = s->scale * growth_factor;
      if (isfinite(grown)) s->scale = grown;
      s->growth_tracker = 0;
    } else {
      s->growth_tracker = successful;
    }
  }
  s->found_inf = 0;
}

}  // namespace

void check_finite(const void* x, int64_t n, DType dtype, int32_t* found_inf, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(x);
    if (aligned16(p))
      check_finite_kernel<T, true><<<grid_for(n / kPackElems + 1), kThreads, 0, stream>>>(p, n, found_inf);
    else
      check_finite_kernel<T, false><<<grid_for(n), kThreads, 0, stream>>>(p, n, found_inf);
  });
  CHECK_CUDA_LAUNCH();
}

void unscale_and_check(float* grads, int64_t n, const float* scale, int32_t* found_inf, cudaStream_t stream) {
  if (n <= 0) return;
  if (aligned16(grads))
    unscale_and_check_kernel<true><<<grid_for(n / 4 + 1), kThreads, 0, stream>>>(grads, n, scale, found_inf);
  else
    unscale_and_check_kernel<false><<<grid_for(n), kThreads, 0, stream>>>(grads, n, scale, found_inf);
  CHECK_CUDA_LAUNCH();
}

void update_loss_scale(LossScaleState* state, float growth_factor, float backoff_factor, int growth_interval,
                       cudaStream_t stream) {
  update_loss_scale_kernel<<<1, 1, 0, stream>>>(state, growth_factor, backoff_factor, growth_interval);
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
