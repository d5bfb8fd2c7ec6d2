// The apply pass of a [BatchNorm2d, ReLU] run with the max pool after it (bn_fused.h, BnMaxPool): one thread
// takes 8 channels of one pooled pixel, normalises each cell of its window as bn_apply_forward would store it
// (rounded to the element type), and keeps the maximum and its position as the max pool would. The run's
// normalised output, which only the pool would read, is never written. Its backward is bn_fused.cu's passes
// with BnBackward::pool.
#include <string>

#include "kernels/bn_fused.h"
#include "kernels/device_utils.cuh"
#include "kernels/index_type.cuh"
#include "kernels/pool_windows.cuh"
#include "kernels/pooling.h"

namespace sb::kernels {
namespace {
using namespace detail;

constexpr int kGroup = 8;  // channels per thread, one 16-byte load of fp16/bf16 (two of fp32)

struct PoolGeometry {
  int64_t n, c, h, w, oh, ow;
  int k, s, pad;
};

// Kernel: the window's size where known at compile time (3, the ResNets' stem: the window's loads unroll and
// are issued together), else 0 (geometry.k).
template <typename T, typename I, int Kernel>
__global__ void __launch_bounds__(kThreads)
    apply_maxpool_nhwc_kernel(PoolGeometry geometry, const T* __restrict__ x, const float* __restrict__ a,
                              const float* __restrict__ b, T* __restrict__ y, uint8_t* __restrict__ positions) {
  const I c = static_cast<I>(geometry.c), h = static_cast<I>(geometry.h), w = static_cast<I>(geometry.w);
  const I oh = static_cast<I>(geometry.oh), ow = static_cast<I>(geometry.ow);
  const I k = Kernel > 0 ? Kernel : geometry.k, s = geometry.s, pad = geometry.pad;
  const I groups = c / kGroup;
  const I total = static_cast<I>(geometry.n) * oh * ow * groups;
  for (I t = static_cast<I>(global_thread()); t < total; t += static_cast<I>(grid_threads())) {
    const I ch0 = (t % groups) * kGroup, pixel = t / groups;
    const I ox = pixel % ow, oy = (pixel / ow) % oh, image = pixel / (ow * oh);
    float ca[kGroup], cb[kGroup];
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      ca[j] = a[ch0 + j];
      cb[j] = b[ch0 + j];
    }
    // The window over the padded image, its cells outside the image skipped: padded cells never win, and
    // its first cell inside starts the search (maxpool_forward's rule, in the same row-major order; pad <=
    // kernel / 2 leaves every window a cell).
    const I y0 = oy * s - pad, x0 = ox * s - pad;
    float best_v[kGroup];
    int best[kGroup];
    bool first = true;
#pragma unroll
    for (I ky = 0; ky < k; ++ky)
#pragma unroll
      for (I kx = 0; kx < k; ++kx) {
        const I yy = y0 + ky, xx = x0 + kx;
        if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
        const Pack<T, kGroup> in =
            *reinterpret_cast<const Pack<T, kGroup>*>(x + ((image * h + yy) * w + xx) * c + ch0);
        const int pos = static_cast<int>(ky * k + kx);
#pragma unroll
        for (int j = 0; j < kGroup; ++j) {
          // The value the apply pass stores (fmaf, ReLU, one rounding), compared as the pool reads it.
          const float v = to_float(from_float<T>(fmaxf(fmaf(to_float(in.v[j]), ca[j], cb[j]), 0.0f)));
          if (first || v > best_v[j] || isnan(v)) {
            best[j] = pos;
            best_v[j] = v;
          }
        }
        first = false;
      }
    Pack<T, kGroup> out;
    PositionLanes<kGroup> where;
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      out.v[j] = from_float<T>(best_v[j]);
      where.v[j] = static_cast<uint8_t>(best[j]);
    }
    const I at = pixel * c + ch0;  // y and the positions are [n, oh, ow, c]
    *reinterpret_cast<Pack<T, kGroup>*>(y + at) = out;
    if (positions) *reinterpret_cast<PositionLanes<kGroup>*>(positions + at) = where;
  }
}

}  // namespace

bool bn_maxpool_supports(const BnFusedShape& s, const BnMaxPool& p, std::initializer_list<const void*> tensors) {
  if (s.n <= 0 || s.c <= 0 || s.h <= 0 || s.w <= 0 || s.layout != Layout::NHWC) return false;
  if (s.c % kGroup != 0 || s.w % 4 != 0) return false;
  if (!maxpool_keeps_positions_at_any_size(p.kernel, p.stride, p.pad, s.layout)) return false;
  if (p.kernel < 1 || p.stride < 1 || p.pad < 0 || 2 * p.pad > p.kernel) return false;
  if (s.h + 2 * p.pad < p.kernel || s.w + 2 * p.pad < p.kernel) return false;
  if (p.positions && reinterpret_cast<uintptr_t>(p.positions) % 8 != 0) return false;
  for (const void* t : tensors)
    if (t && !aligned16(t)) return false;
  return true;
}

void bn_apply_maxpool_forward(const BnFusedShape& s, const BnApply& a, const BnMaxPool& p, cudaStream_t stream) {
  if (!bn_maxpool_supports(s, p, {a.x, a.y}) || !a.relu || a.relu_after_residual || a.residual || a.dropout.p > 0.0 ||
      a.relu_bits)
    fatal("bn_apply_maxpool_forward: the max pool " + std::to_string(p.kernel) + "/" + std::to_string(p.stride) + "/" +
          std::to_string(p.pad) + " after a run on [" + std::to_string(s.n) + ", " + std::to_string(s.c) + ", " +
          std::to_string(s.h) + ", " + std::to_string(s.w) + "] " + layout_name(s.layout) +
          " is not supported (check bn_maxpool_supports; the run needs its ReLU and no dropout or residual)");
  const PoolGeometry g{s.n, s.c, s.h, s.w, bn_pooled_extent(s.h, p), bn_pooled_extent(s.w, p), p.kernel, p.stride, p.pad};
  const int64_t threads = g.n * g.oh * g.ow * (g.c / kGroup);
  dispatch_dtype(s.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_index(s.n * s.c * s.h * s.w, [&](auto index) {
      using I = typename decltype(index)::type;
      auto* const kernel = p.kernel == 3 ? apply_maxpool_nhwc_kernel<T, I, 3> : apply_maxpool_nhwc_kernel<T, I, 0>;
      kernel<<<grid_for(threads), kThreads, 0, stream>>>(g, static_cast<const T*>(a.x), a.a, a.b,
                                                         static_cast<T*>(a.y), p.positions);
    });
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
