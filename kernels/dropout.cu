// Dropout (see dropout.h). One Philox block gives the uniforms of 4 consecutive logical elements
// (philox_uniform_at: element i uses word i%4 of block i/4), so a thread handles such a group of 4 and
// draws once. In NCHW the group is 4 consecutive stored elements. In NHWC with w % 4 == 0 the group is 4
// consecutive w of one (n, c, h); a warp's threads take consecutive c, so each of the 4 accesses is
// coalesced. Other NHWC shapes fall back to one draw per element.
//
// The keep test is done on the 24-bit integer behind the uniform: philox_uniform(bits) = k / 2^24 with
// k = bits >> 8, and k / 2^24 >= p (in double, as the CPU layer compares) exactly when k >= ceil(p * 2^24).
#include "kernels/dropout.h"

#include <cmath>

#include "kernels/device_utils.cuh"
#include "kernels/dropout_mask.cuh"

namespace sb::kernels {

detail::DropoutMask detail::make_dropout_mask(double p, uint64_t key, uint64_t step, const uint64_t* step_device,
                                              uint64_t first_element, const char* what) {
  if (!(p >= 0.0 && p <= 1.0)) fatal(std::string(what) + ": probability " + std::to_string(p) + " is outside [0, 1]");
  if (first_element % 4 != 0)
    fatal(std::string(what) + ": the first element's mask index " + std::to_string(first_element) + " is not a multiple of 4");
  DropoutMask d;
  d.key = key;
  d.step = step;
  d.step_device = step_device;
  d.first_group = first_element / 4;
  d.threshold = static_cast<uint32_t>(std::ceil(p * 16777216.0));  // exact: p * 2^24 only shifts the exponent
  d.scale = static_cast<float>(1.0 / (1.0 - p));
  return d;
}

namespace {
using namespace detail;

// Dropped elements are written as 0 rather than x * 0 (NaN for p == 1), as the CPU layer does.
template <typename T>
__device__ __forceinline__ T drop(T x, bool keep, float scale) {
  return keep ? from_float<T>(to_float(x) * scale) : from_float<T>(0.0f);
}

// 4 consecutive elements loaded and stored as one 8-byte (fp16/bf16) or 16-byte (fp32) access.
template <typename T>
struct alignas(4 * sizeof(T)) Quad {
  T v[4];
};

// NCHW (or any tensor whose storage order is the logical order): group g = elements 4g..4g+3.
template <typename T, bool Vector>
__global__ void dropout_contiguous_kernel(const T* x, T* y, int64_t total, DropoutMask d) {
  const int64_t groups = (total + 3) / 4;
  const uint64_t step = mask_step(d);
  for (int64_t g = global_thread(); g < groups; g += grid_threads()) {
    const Philox4 r = mask_words(d, step, static_cast<uint64_t>(g));
    const int64_t base = g * 4;
    if (base + 4 <= total) {
      Quad<T> v;
      if constexpr (Vector) {
        v = reinterpret_cast<const Quad<T>*>(x)[g];
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) v.v[j] = x[base + j];
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) v.v[j] = drop(v.v[j], mask_keeps(r.v[j], d.threshold), d.scale);
      if constexpr (Vector) {
        reinterpret_cast<Quad<T>*>(y)[g] = v;
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) y[base + j] = v.v[j];
      }
    } else {
      for (int j = 0; base + j < total; ++j) y[base + j] = drop(x[base + j], mask_keeps(r.v[j], d.threshold), d.scale);
    }
  }
}

// Index arithmetic of the NHWC kernels runs in I: int32_t below 2^30 elements (64-bit division is several
// times dearer and dominated these kernels), else int64_t.

// NHWC with w % 4 == 0: thread item = (n, h, w/4, c), c fastest. Logical index of (n, c, h, w0) is
// ((n*C + c)*H + h)*W + w0, a multiple of 4, so its group is that index / 4 and covers w0..w0+3.
template <typename T, typename I>
__global__ void dropout_nhwc_w4_kernel(const T* x, T* y, I n, I c, I h, I w, DropoutMask d) {
  const I w4 = w / 4;
  const I items = n * h * w4 * c;
  const uint64_t step = mask_step(d);
  for (I t = static_cast<I>(global_thread()); t < items; t += static_cast<I>(grid_threads())) {
    const I ch = t % c;
    I rest = t / c;
    const I wq = rest % w4;
    rest /= w4;
    const I row = rest % h, image = rest / h;
    const I logical = ((image * c + ch) * h + row) * w + wq * 4;
    const Philox4 r = mask_words(d, step, static_cast<uint64_t>(logical) >> 2);
    const I stored = ((image * h + row) * w + wq * 4) * c + ch;
#pragma unroll
    for (int j = 0; j < 4; ++j) y[stored + j * c] = drop(x[stored + j * c], mask_keeps(r.v[j], d.threshold), d.scale);
  }
}

// Any NHWC shape: one element (and one draw) per thread item, in storage order.
template <typename T, typename I>
__global__ void dropout_nhwc_any_kernel(const T* x, T* y, I n, I c, I h, I w, DropoutMask d) {
  const I total = n * c * h * w;
  const uint64_t step = mask_step(d);
  for (I s = static_cast<I>(global_thread()); s < total; s += static_cast<I>(grid_threads())) {
    const I ch = s % c;
    I rest = s / c;
    const I col = rest % w;
    rest /= w;
    const I row = rest % h, image = rest / h;
    const uint64_t logical = static_cast<uint64_t>(((image * c + ch) * h + row) * w + col);
    y[s] = drop(x[s], mask_keeps_at(d, step, logical), d.scale);
  }
}

// Forward and backward are the same map: out = in * mask * scale.
void launch_dropout(const void* in, void* out, int64_t n, int64_t c, int64_t h, int64_t w, Layout layout,
                    DType dtype, double p, uint64_t key, uint64_t step, const uint64_t* step_device,
                    uint64_t first_element, cudaStream_t stream) {
  const int64_t total = n * c * h * w;
  if (total <= 0) return;
  if (p == 0.0) {  // the identity, as in the CPU layer
    if (in != out)
      CHECK_CUDA(cudaMemcpyAsync(out, in, static_cast<size_t>(total) * dtype_size(dtype), cudaMemcpyDeviceToDevice,
                                 stream));
    return;
  }
  const DropoutMask d = make_dropout_mask(p, key, step, step_device, first_element, "dropout");
  // With one channel, or h = w = 1, NHWC stores the logical order too.
  const bool logical_order = layout == Layout::NCHW || c == 1 || h * w == 1;
  const bool small = total < (int64_t{1} << 30);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    auto nhwc = [&](auto index) {
      using I = typename decltype(index)::type;
      const I ni = static_cast<I>(n), ci = static_cast<I>(c), hi = static_cast<I>(h), wi = static_cast<I>(w);
      if (w % 4 == 0)
        dropout_nhwc_w4_kernel<T, I><<<grid_for(total / 4), kThreads, 0, stream>>>(x, y, ni, ci, hi, wi, d);
      else
        dropout_nhwc_any_kernel<T, I><<<grid_for(total), kThreads, 0, stream>>>(x, y, ni, ci, hi, wi, d);
    };
    const unsigned grid = grid_for((total + 3) / 4);
    const bool vector = ((reinterpret_cast<uintptr_t>(in) | reinterpret_cast<uintptr_t>(out)) % (4 * sizeof(T))) == 0;
    if (logical_order && vector)
      dropout_contiguous_kernel<T, true><<<grid, kThreads, 0, stream>>>(x, y, total, d);
    else if (logical_order)
      dropout_contiguous_kernel<T, false><<<grid, kThreads, 0, stream>>>(x, y, total, d);
    else if (small)
      nhwc(TypeTag<int32_t>{});
    else
      nhwc(TypeTag<int64_t>{});
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace

void dropout_forward(const void* x, void* y, int64_t n, int64_t c, int64_t h, int64_t w, Layout layout, DType dtype,
                     double p, uint64_t mask_key, uint64_t step, cudaStream_t stream, const uint64_t* step_device,
                     uint64_t first_element) {
  launch_dropout(x, y, n, c, h, w, layout, dtype, p, mask_key, step, step_device, first_element, stream);
}

void dropout_backward(const void* dy, void* dx, int64_t n, int64_t c, int64_t h, int64_t w, Layout layout,
                      DType dtype, double p, uint64_t mask_key, uint64_t step, cudaStream_t stream,
                      const uint64_t* step_device, uint64_t first_element) {
  launch_dropout(dy, dx, n, c, h, w, layout, dtype, p, mask_key, step, step_device, first_element, stream);
}

}  // namespace sb::kernels
