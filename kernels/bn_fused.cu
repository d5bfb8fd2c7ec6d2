// The fused batch-norm passes (see bn_fused.h).
//
// Two traversals cover the supported tensors, both with the channel fixed per thread so that the
// per-channel coefficients sit in registers and the reductions accumulate there:
//  - NHWC: a 2-d block whose x covers every group of 8 channels of a pixel (one 16-byte load of fp16/bf16,
//    two of fp32) and whose y walks items: 4 consecutive w of one row. A warp thus reads contiguous memory,
//    and one Philox draw per channel gives the mask of an item's 4 elements (their logical indices are 4
//    consecutive integers starting at a multiple of 4). Each thread loads all of an item (4 accesses per
//    tensor) before it computes or stores, so that enough bytes are in flight; the grid is about one wave
//    of resident blocks that loop over the items.
//  - NCHW: blockIdx.x is the channel, blockIdx.y and the threads walk its n planes 4 elements at a time
//    (4 consecutive logical elements: one draw).
// Sums are accumulated per thread in fp32 and over the block in fp32; each block stores its partial sums
// (no atomics), and a combine kernel adds them up in double in a fixed order, so that every result is
// the same from run to run (bitwise comparisons of CUDA graph replays, --deterministic).
#include "kernels/bn_fused.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "kernels/bn_fused_detail.cuh"
#include "kernels/device_utils.cuh"
#include "kernels/dropout_mask.cuh"
#include "kernels/index_type.cuh"
#include "kernels/pool_windows.cuh"

namespace sb::kernels {
namespace {
using namespace detail;

constexpr int kGroup = 8;  // channels per NHWC load
constexpr int kRun = 4;    // consecutive logical elements sharing one Philox draw
// Resident blocks per SM of the reduction passes (their launch bounds): 768 threads, enough loads in flight
// to stream at full bandwidth, and few partial-sum rows to combine. The element passes, which hold more
// coefficients, are bounded to 2 (512 threads with 8 16-byte loads each in flight).
constexpr int kReduceBlocksPerSm = 3;
constexpr int kElementBlocksPerSm = 2;

template <typename T>
struct alignas(kRun * sizeof(T)) Quad {
  T v[kRun];
};
using Group = float[kGroup];

// Where an element's dropout decision comes from: none (no dropout), a Philox draw, or the keep bits the
// apply pass stored (NHWC only).
enum class Keep { All, Philox, Bits };

// ---- the element maths, shared by every traversal ----

// The forward value before the residual: dropout(relu(x * a + b)).
template <bool Drop>
__device__ __forceinline__ float apply_value(float x, float a, float b, bool relu, bool keep, float scale) {
  float v = fmaf(x, a, b);
  if (relu) v = fmaxf(v, 0.0f);
  if constexpr (Drop) v = keep ? v * scale : 0.0f;
  return v;
}

// Where the apply pass's ReLU goes: before the residual add, or after it (BnApply::relu_after_residual).
struct ReluPlace {
  bool before_residual, after_residual;
  __device__ explicit ReluPlace(const BnApply& a)
      : before_residual(a.relu && !a.relu_after_residual), after_residual(a.relu && a.relu_after_residual) {}
};

// The apply pass's output: apply_value, plus the shortcut `r` (with its bias) where there is a residual,
// then the ReLU where it follows the add.
template <bool Drop>
__device__ __forceinline__ float output_value(float x, float a, float b, const ReluPlace& relu, bool keep,
                                              float scale, bool has_residual, float r) {
  float o = apply_value<Drop>(x, a, b, relu.before_residual, keep, scale);
  if (has_residual) o += r;
  if (relu.after_residual) o = fmaxf(o, 0.0f);
  return o;
}

// The gradient at the BN output: dy through the dropout and the ReLU (recomputed from x, a, b exactly as
// the forward computed it).
template <bool Drop>
__device__ __forceinline__ float bn_output_grad(float dy, float x, float a, float b, bool relu, bool keep,
                                                float scale) {
  float g = dy;
  if constexpr (Drop) g = keep ? g * scale : 0.0f;
  if (relu && !(fmaf(x, a, b) > 0.0f)) g = 0.0f;
  return g;
}

// Per-channel dx = k1 * g - k2 - k3 * (x - mean), from the backward sums.
struct DxCoefficients {
  float mean, k1, k2, k3;
};
__device__ __forceinline__ DxCoefficients dx_coefficients(const BnBackward& a, int64_t c, int64_t ch, double count) {
  const double* sums = carve(a.workspace, c).sums;
  const float inv_std = a.saved_inv_std[ch];
  const float k1 = a.scale[ch] * inv_std;
  DxCoefficients k;
  k.mean = a.saved_mean[ch];
  k.k1 = k1;
  k.k2 = static_cast<float>(k1 * (sums[ch] / count));
  k.k3 = static_cast<float>(k1 * inv_std * inv_std * (sums[c + ch] / count));
  return k;
}

// ---- block reductions into the workspace's partials: row blockIdx.y, [0, c) first sums, [c, 2c) second ----

// NHWC: every thread holds 2 * kGroup partial sums for the channels of its column; the block adds them over
// threadIdx.y.
__device__ void reduce_columns(const Group& s1, const Group& s2, bool active, int64_t ch0, int64_t c, float* partials) {
  __shared__ float partial[kThreads * 2 * kGroup];
  const int tx = threadIdx.x, ty = threadIdx.y, bx = blockDim.x, by = blockDim.y;
  float* mine = partial + (ty * bx + tx) * 2 * kGroup;
#pragma unroll
  for (int j = 0; j < kGroup; ++j) {
    mine[j] = s1[j];
    mine[kGroup + j] = s2[j];
  }
  __syncthreads();
  if (!active) return;
  for (int k = ty; k < 2 * kGroup; k += by) {
    float total = 0.0f;
    for (int r = 0; r < by; ++r) total += partial[(r * bx + tx) * 2 * kGroup + k];
    const int64_t ch = ch0 + (k % kGroup);
    partials[blockIdx.y * 2 * c + (k < kGroup ? ch : c + ch)] = total;
  }
}

// NCHW: the block's threads share one channel.
__device__ void reduce_block(float s1, float s2, int64_t ch, int64_t c, float* partials) {
  __shared__ float partial[2][kThreads / 32];
  s1 = warp_sum(s1);
  s2 = warp_sum(s2);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    partial[0][warp] = s1;
    partial[1][warp] = s2;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  float t1 = 0.0f, t2 = 0.0f;
  for (int i = 0; i < static_cast<int>(blockDim.x / 32); ++i) {
    t1 += partial[0][i];
    t2 += partial[1][i];
  }
  partials[blockIdx.y * 2 * c + ch] = t1;
  partials[blockIdx.y * 2 * c + c + ch] = t2;
}

// ---- NHWC traversal ----

// Item t: pixels (image, row, 4*wq .. 4*wq+3) of the column's channel group. `stored` is the offset of its
// first element; `group` is the Philox group of its first channel (the others follow at a stride of h*w/4);
// `word` is the index of its 32 keep bits (bn_fused_mask_bit).
template <typename I>
struct NhwcItem {
  I stored, word;
  uint64_t group;
  I image, row, w0;  // its first pixel
};
template <typename I>
__device__ __forceinline__ NhwcItem<I> nhwc_item(I t, I ch0, I c, I h, I w) {
  const I w4 = w / kRun;
  const I wq = t % w4, rest = t / w4;
  const I row = rest % h, image = rest / h;
  NhwcItem<I> it;
  it.stored = ((image * h + row) * w + wq * kRun) * c + ch0;
  it.word = (t * c + ch0) / kGroup;
  it.group = static_cast<uint64_t>(((image * c + ch0) * h + row) * w + wq * kRun) / kRun;
  it.image = image;
  it.row = row;
  it.w0 = wq * kRun;
  return it;
}

// The item's keep bits: bit (q * kGroup + j) says whether channel j of its w0 + q is kept.
template <Keep K>
struct KeepSource {
  DropoutMask d;
  uint64_t step = 0, group_stride = 0;
  const uint32_t* bits = nullptr;

  __device__ __forceinline__ KeepSource(const DropoutMask& mask, const uint32_t* stored, int64_t h, int64_t w)
      : d(mask), bits(stored) {
    if constexpr (K == Keep::Philox) {
      step = mask_step(d);
      group_stride = static_cast<uint64_t>(h * w / kRun);
    }
  }
  template <typename I>
  __device__ __forceinline__ uint32_t operator()(const NhwcItem<I>& it) const {
    if constexpr (K == Keep::All) return 0xffffffffu;
    if constexpr (K == Keep::Bits) return bits[it.word];
    uint32_t keep = 0;
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      const Philox4 r = mask_words(d, step, it.group + j * group_stride);
#pragma unroll
      for (int q = 0; q < kRun; ++q)
        if (mask_keeps(r.v[q], d.threshold)) keep |= 1u << (q * kGroup + j);
    }
    return keep;
  }
};

template <typename T>
__device__ __forceinline__ Pack<T, kGroup> load_group(const T* p, int64_t at) {
  return *reinterpret_cast<const Pack<T, kGroup>*>(p + at);
}

// The 4 pixels of an item, loaded together so that their accesses are in flight at once.
template <typename T>
struct ItemPacks {
  Pack<T, kGroup> v[kRun];
};
template <typename T, typename I>
__device__ __forceinline__ ItemPacks<T> load_item(const T* p, I stored, I c) {
  ItemPacks<T> out;
#pragma unroll
  for (int q = 0; q < kRun; ++q) out.v[q] = load_group(p, stored + q * c);
  return out;
}
template <typename T, typename I>
__device__ __forceinline__ void store_item(T* p, I stored, I c, const ItemPacks<T>& v) {
#pragma unroll
  for (int q = 0; q < kRun; ++q) *reinterpret_cast<Pack<T, kGroup>*>(p + stored + q * c) = v.v[q];
}

template <typename I>
__device__ __forceinline__ void load_channels(const float* p, I ch0, Group& out) {
#pragma unroll
  for (int j = 0; j < kGroup; ++j) out[j] = p[ch0 + j];
}

// BnApply::residual_scale of the column's channels, 1 where there is none (fmaf(r, 1, bias) is r + bias).
template <typename I>
__device__ __forceinline__ void load_residual_scale(const BnApply& a, I ch0, Group& out) {
  if (a.residual_scale) {
    load_channels(a.residual_scale, ch0, out);
    return;
  }
#pragma unroll
  for (int j = 0; j < kGroup; ++j) out[j] = 1.0f;
}

// The apply coefficients of the column's channels: a.a and a.b, or, where the pass finalizes a convolution's
// sums (BnApply::sum), computed from them; one thread per channel of the grid's first row of blocks then
// writes what bn_finalize_sums writes.
template <typename I>
__device__ __forceinline__ void load_apply_coefficients(const BnApply& a, I ch0, double count, Group& ca, Group& cb) {
  if (!a.sum) {
    load_channels(a.a, ch0, ca);
    load_channels(a.b, ch0, cb);
    return;
  }
  const bool writes = blockIdx.y == 0 && threadIdx.y == 0;
#pragma unroll
  for (int j = 0; j < kGroup; ++j) {
    const ChannelMoments m = moments_from_sums(a.sum, a.sqsum, ch0 + j, count);
    const ApplyCoefficients k = writes ? bn_finalize_channel(a.finalize, ch0 + j, m.mean, m.var, count)
                                       : bn_apply_coefficients(a.finalize, ch0 + j, m.mean, m.var);
    ca[j] = k.a;
    cb[j] = k.b;
  }
}

template <typename I>
__device__ __forceinline__ I nhwc_first_channel() {
  return static_cast<I>(blockIdx.x * blockDim.x + threadIdx.x) * kGroup;
}

// Calls f(item) for each of the thread's items in the column at ch0. The grid sweeps the tensor from its
// first item to its last, or with from_end from its last to its first (see the launches: a pass starts
// where the previous pass over the same tensor ended, whose last bytes are still in L2).
template <typename I, typename F>
__device__ __forceinline__ void for_each_nhwc_item(I ch0, I n, I c, I h, I w, bool from_end, F&& f) {
  const I items = n * h * (w / kRun);
  for (I t = static_cast<I>(blockIdx.y * blockDim.y + threadIdx.y); t < items;
       t += static_cast<I>(gridDim.y * blockDim.y))
    f(nhwc_item(from_end ? items - 1 - t : t, ch0, c, h, w));
}

template <typename T, typename I>
__global__ void __launch_bounds__(kThreads, kReduceBlocksPerSm)
    stats_nhwc_kernel(const T* x, I n, I c, I h, I w, Workspace ws, bool from_end) {
  const I ch0 = nhwc_first_channel<I>();
  const bool active = ch0 < c;
  Group shift = {}, s1 = {}, s2 = {};
  if (active) {
    const Pack<T, kGroup> first = load_group(x, ch0);
#pragma unroll
    for (int j = 0; j < kGroup; ++j) shift[j] = to_float(first.v[j]);
    for_each_nhwc_item(ch0, n, c, h, w, from_end, [&](const NhwcItem<I>& it) {
      const ItemPacks<T> v = load_item(x, it.stored, c);
#pragma unroll
      for (int q = 0; q < kRun; ++q)
#pragma unroll
        for (int j = 0; j < kGroup; ++j) {
          const float d = to_float(v.v[q].v[j]) - shift[j];
          s1[j] += d;
          s2[j] = fmaf(d, d, s2[j]);
        }
    });
    if (blockIdx.y == 0 && threadIdx.y == 0)
      for (int j = 0; j < kGroup; ++j) ws.shift[ch0 + j] = shift[j];
  }
  reduce_columns(s1, s2, active, ch0, c, ws.partials);
}

// With dropout (K == Philox) the pass also stores each item's keep bits where a.dropout.keep_bits is set.
template <typename T, typename I, Keep K>
__global__ void __launch_bounds__(kThreads, kElementBlocksPerSm)
    apply_nhwc_kernel(I n, I c, I h, I w, BnApply a, DropoutMask d) {
  constexpr bool kDrop = K != Keep::All;
  const I ch0 = nhwc_first_channel<I>();
  if (ch0 >= c) return;
  const T* x = static_cast<const T*>(a.x);
  const T* res = static_cast<const T*>(a.residual);
  T* y = static_cast<T*>(a.y);
  uint32_t* keep_bits = a.dropout.keep_bits;
  uint32_t* relu_bits = a.relu_bits;
  const ReluPlace relu(a);
  Group ca, cb, cr{}, cs;
  load_apply_coefficients(a, ch0, static_cast<double>(n) * static_cast<double>(h) * static_cast<double>(w), ca, cb);
  if (a.residual_bias) load_channels(a.residual_bias, ch0, cr);
  load_residual_scale(a, ch0, cs);
  const KeepSource<K> keep_of(d, nullptr, h, w);
  for_each_nhwc_item(ch0, n, c, h, w, a.from_end, [&](const NhwcItem<I>& it) {
    const ItemPacks<T> xv = load_item(x, it.stored, c);
    ItemPacks<T> rv;
    if (res) rv = load_item(res, it.stored, c);
    const uint32_t keep = keep_of(it);
    if (kDrop && keep_bits) keep_bits[it.word] = keep;
    ItemPacks<T> out;
    uint32_t positive = 0;  // taken as each output is made: fewer live registers than a pass over out after
#pragma unroll
    for (int q = 0; q < kRun; ++q)
#pragma unroll
      for (int j = 0; j < kGroup; ++j) {
        const float r = res ? fmaf(to_float(rv.v[q].v[j]), cs[j], cr[j]) : 0.0f;
        out.v[q].v[j] = from_float<T>(output_value<kDrop>(to_float(xv.v[q].v[j]), ca[j], cb[j], relu,
                                                          (keep >> (q * kGroup + j)) & 1u, d.scale, res != nullptr, r));
        if (to_float(out.v[q].v[j]) > 0.0f) positive |= 1u << (q * kGroup + j);  // relu_backward's condition
      }
    store_item(y, it.stored, c, out);
    if (relu_bits) relu_bits[it.word] = positive;
  });
}

// The dx coefficients k1, k2, k3 of the column's kGroup channels (dx_coefficients), kept in registers.
template <typename I>
__device__ __forceinline__ void load_dx_coefficients(const BnBackward& a, I c, I ch0, double count, Group& k1,
                                                     Group& k2, Group& k3) {
#pragma unroll
  for (int j = 0; j < kGroup; ++j) {
    const DxCoefficients k = dx_coefficients(a, c, ch0 + j, count);
    k1[j] = k.k1;
    k2[j] = k.k2;
    k3[j] = k.k3;
  }
}

// Pass 1's in-place masking of dy by the following ReLU: dy is zeroed where that ReLU's output is not
// positive (the forward's bits of y > 0, relu_backward's condition) and written back, so that the backward
// after this one reads the masked gradient.
template <typename T, typename I>
__device__ __forceinline__ void mask_by_following_relu(const uint32_t* positive_bits, T* masked_dy,
                                                       const NhwcItem<I>& it, I c, ItemPacks<T>& gv) {
  const uint32_t positive = positive_bits[it.word];
#pragma unroll
  for (int q = 0; q < kRun; ++q)
#pragma unroll
    for (int j = 0; j < kGroup; ++j)
      if (!((positive >> (q * kGroup + j)) & 1u)) gv.v[q].v[j] = from_float<T>(0.0f);
  store_item(masked_dy, it.stored, c, gv);
}

// Adds a window's gradient to a pixel's sums in the channels whose maximum sits at `pos`, the pixel's cell in
// that window.
template <typename T>
__device__ __forceinline__ void add_routed(const PositionLanes<kGroup>& where, const Pack<T, kGroup>& grad,
                                           uint32_t pos, Group& sum) {
#pragma unroll
  for (int j = 0; j < kGroup; ++j)
    if (where.v[j] == pos) sum[j] += to_float(grad.v[j]);
}

// The item's routed sums, each rounded once to the element type.
template <typename T>
__device__ __forceinline__ ItemPacks<T> rounded_item(const Group (&sum)[kRun]) {
  ItemPacks<T> out;
#pragma unroll
  for (int q = 0; q < kRun; ++q)
#pragma unroll
    for (int j = 0; j < kGroup; ++j) out.v[q].v[j] = from_float<T>(sum[q][j]);
  return out;
}

// The gradient at the item's 4 pixels when a max pool follows the run: each pooled output's gradient goes to
// the maximum its window kept (maxpool_backward with positions: for each pixel the same sums in the same
// window order, from 0, rounded once), read from the pool's output gradient instead of a tensor of the run's
// output size. The windows that cover any of the 4 pixels are read once each.
template <typename T, typename I>
__device__ __forceinline__ ItemPacks<T> pooled_gradient(const BnMaxPool& p, const T* pooled_dy, I ch0, I c, I h, I w,
                                                         const NhwcItem<I>& it) {
  const I k = p.kernel, s = p.stride, pad = p.pad;
  const I oh = window_extent(h, k, s, pad), ow = window_extent(w, k, s, pad);
  I oy_first, oy_last, ox_first, ox_last, unused;
  covering<I>(it.row + pad, k, s, oh, oy_first, oy_last);
  covering<I>(it.w0 + pad, k, s, ow, ox_first, unused);             // the first pixel's first window
  covering<I>(it.w0 + kRun - 1 + pad, k, s, ow, unused, ox_last);   // the last pixel's last
  Group sum[kRun] = {};
  for (I oy = oy_first; oy <= oy_last; ++oy) {
    const I row_cells = (it.row + pad - oy * s) * k;
    for (I ox = ox_first; ox <= ox_last; ++ox) {
      const I o = ((it.image * oh + oy) * ow + ox) * c + ch0;
      const PositionLanes<kGroup> where = *reinterpret_cast<const PositionLanes<kGroup>*>(p.positions + o);
      const Pack<T, kGroup> grad = load_group(pooled_dy, o);
      const I first_column = ox * s - pad;
#pragma unroll
      for (int q = 0; q < kRun; ++q) {
        const I kx = it.w0 + q - first_column;  // the pixel's column in this window, if it lies in it
        if (kx < 0 || kx >= k) continue;
        const uint32_t pos = static_cast<uint32_t>(row_cells + kx);
        add_routed(where, grad, pos, sum[q]);
      }
    }
  }
  return rounded_item<T>(sum);
}

// pooled_gradient for the stem pool (3x3, stride 2, padding 1), its windows known at compile time: the item's
// 4 pixels (w0 = 4m) lie in the windows of pooled columns 2m .. 2m + 2, and of one pooled row (an even row r:
// r / 2, the windows' middle row) or two (odd: (r - 1) / 2 by their last row, (r + 1) / 2 by their first).
// All of them are loaded before any is used; one outside the pooled output reads as position 0xff, which no
// cell has. The sums are pooled_gradient's, in the same window order.
template <typename T, typename I>
__device__ __forceinline__ ItemPacks<T> stem_pooled_gradient(const BnMaxPool& p, const T* pooled_dy, I ch0, I c,
                                                              I h, I w, const NhwcItem<I>& it) {
  const I k = kStemPoolKernel, s = kStemPoolStride, pad = kStemPoolPad;
  const I oh = window_extent(h, k, s, pad), ow = window_extent(w, k, s, pad);
  const bool odd = (it.row & 1) != 0;
  const I oy0 = it.row / 2, ox0 = it.w0 / 2;
  const bool second_row = odd && oy0 + 1 < oh;
  const uint32_t first_row_cells = odd ? 6u : 3u;  // the window row (2 or 1, times 3) the pixels lie in
  PositionLanes<kGroup> where[2][3];
  Pack<T, kGroup> grad[2][3];
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int i = 0; i < 3; ++i) {
      if ((r == 0 || second_row) && ox0 + i < ow) {
        const I o = ((it.image * oh + oy0 + r) * ow + ox0 + i) * c + ch0;
        where[r][i] = *reinterpret_cast<const PositionLanes<kGroup>*>(p.positions + o);
        grad[r][i] = load_group(pooled_dy, o);
      } else {
#pragma unroll
        for (int j = 0; j < kGroup; ++j) {
          where[r][i].v[j] = 0xff;
          grad[r][i].v[j] = from_float<T>(0.0f);
        }
      }
    }
  Group sum[kRun] = {};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const uint32_t row_cells = r == 0 ? first_row_cells : 0u;
#pragma unroll
    for (int i = 0; i < 3; ++i)
#pragma unroll
      for (int q = 0; q < kRun; ++q) {
        const int kx = q + 1 - 2 * i;  // pixel q's column in window i, if it lies in it
        if (kx < 0 || kx > 2) continue;
        const uint32_t pos = row_cells + static_cast<uint32_t>(kx);
        add_routed(where[r][i], grad[r][i], pos, sum[q]);
      }
  }
  return rounded_item<T>(sum);
}

// How a pass finds dy: as stored, or routed from a max pool's output gradient (any pool, or the stem's).
enum class PoolRoute { None, Any, Stem };

// Pass 1 (Dx = false) accumulates the sums; pass 2 (Dx = true) writes dx. MasksRelu (pass 1 only, no
// dropout, no ReLU in the run): dy is first masked by the following ReLU's output and written back in place.
// Drawing the mask or the masking need more registers than the reduction's bound leaves (the masking spills
// at 80), so those instantiations take the element passes' bound and grid (backward_reduce_geometry).
// Pool: dy is the gradient of the max pool after the run (pooled_gradient, stem_pooled_gradient), as is that
// bound.
template <typename T, typename I, Keep K, bool Dx, bool MasksRelu = false, PoolRoute Pool = PoolRoute::None>
__global__ void __launch_bounds__(kThreads, Dx || MasksRelu || Pool != PoolRoute::None || K == Keep::Philox
                                                ? kElementBlocksPerSm
                                                : kReduceBlocksPerSm)
    backward_nhwc_kernel(I n, I c, I h, I w, BnBackward a, DropoutMask d, bool from_end) {
  constexpr bool Pooled = Pool != PoolRoute::None;
  static_assert(!MasksRelu || (!Dx && K == Keep::All), "the ReLU mask is applied by pass 1, without dropout");
  static_assert(!Pooled || (!MasksRelu && K == Keep::All), "a pooled run has no dropout and no following ReLU");
  constexpr bool kDrop = K != Keep::All;
  const I ch0 = nhwc_first_channel<I>();
  const bool active = ch0 < c;
  if (Dx && !active) return;
  const T* x = static_cast<const T*>(a.x);
  const T* dy = static_cast<const T*>(a.dy);
  const uint32_t* relu_output_bits = a.relu_output_bits;
  T* masked_dy = static_cast<T*>(a.dy_in_place);
  T* dx = static_cast<T*>(a.dx);
  const bool relu = !MasksRelu && a.relu;  // a run whose following ReLU is masked here has none of its own
  const double count = static_cast<double>(n) * static_cast<double>(h) * static_cast<double>(w);
  Group ca = {}, cb = {}, mean = {}, k1 = {}, k2 = {}, k3 = {}, s1 = {}, s2 = {};
  if (active) {
    if (relu) {
      load_channels(a.a, ch0, ca);
      load_channels(a.b, ch0, cb);
    }
    load_channels(a.saved_mean, ch0, mean);
    if constexpr (Dx) load_dx_coefficients(a, c, ch0, count, k1, k2, k3);
    const KeepSource<K> keep_of(d, a.dropout.keep_bits, h, w);
    for_each_nhwc_item(ch0, n, c, h, w, from_end, [&](const NhwcItem<I>& it) {
      const ItemPacks<T> xv = load_item(x, it.stored, c);
      ItemPacks<T> gv;
      if constexpr (Pool == PoolRoute::Stem) gv = stem_pooled_gradient(a.pool, dy, ch0, c, h, w, it);
      else if constexpr (Pool == PoolRoute::Any) gv = pooled_gradient(a.pool, dy, ch0, c, h, w, it);
      else gv = load_item(dy, it.stored, c);
      if constexpr (MasksRelu) mask_by_following_relu(relu_output_bits, masked_dy, it, c, gv);
      const uint32_t keep = keep_of(it);
      ItemPacks<T> out;
#pragma unroll
      for (int q = 0; q < kRun; ++q)
#pragma unroll
        for (int j = 0; j < kGroup; ++j) {
          const float xf = to_float(xv.v[q].v[j]);
          const float g = bn_output_grad<kDrop>(to_float(gv.v[q].v[j]), xf, ca[j], cb[j], relu,
                                                (keep >> (q * kGroup + j)) & 1u, d.scale);
          if constexpr (Dx) {
            out.v[q].v[j] = from_float<T>(k1[j] * g - k2[j] - k3[j] * (xf - mean[j]));
          } else {
            s1[j] += g;
            s2[j] = fmaf(g, xf - mean[j], s2[j]);
          }
        }
      if constexpr (Dx) store_item(dx, it.stored, c, out);
    });
  }
  if constexpr (!Dx) reduce_columns(s1, s2, active, ch0, c, carve(a.workspace, c).partials);
}

// A projection block's end, y = relu(bn(x) + bn_s(x_s)): both batch norms' backward in each pass. g, the
// gradient at either batch norm's output, is dy masked by the ReLU's stored bits, the same for both. Pass 1
// (Dx = false) sums g, g * (x - mean) and g * (x_s - mean_s); pass 2 writes dx and dx_s. dy is read once per
// pass for the two; dx may be dy itself, each item stored after it was read. Pass 2 holds both batch norms'
// dx coefficients, which the element passes' register bound cannot, so it runs one block per SM.
template <bool Dx>
constexpr int pair_blocks_per_sm() { return Dx ? 1 : kElementBlocksPerSm; }

template <typename T, typename I, bool Dx>
__global__ void __launch_bounds__(kThreads, pair_blocks_per_sm<Dx>())
    pair_backward_nhwc_kernel(I n, I c, I h, I w, BnBackward m, BnBackward sc, bool from_end) {
  const I ch0 = nhwc_first_channel<I>();
  const bool active = ch0 < c;
  if (Dx && !active) return;
  const T* xm = static_cast<const T*>(m.x);
  const T* xs = static_cast<const T*>(sc.x);
  const T* dy = static_cast<const T*>(m.dy);
  const uint32_t* positive_bits = m.relu_output_bits;
  T* dxm = static_cast<T*>(m.dx);
  T* dxs = static_cast<T*>(sc.dx);
  const double count = static_cast<double>(n) * static_cast<double>(h) * static_cast<double>(w);
  Group mean_m = {}, mean_s = {}, k1m = {}, k2m = {}, k3m = {}, k1s = {}, k2s = {}, k3s = {};
  Group g_sum = {}, s2m = {}, s2s = {};
  if (active) {
    load_channels(m.saved_mean, ch0, mean_m);
    load_channels(sc.saved_mean, ch0, mean_s);
    if constexpr (Dx) {
      load_dx_coefficients(m, c, ch0, count, k1m, k2m, k3m);
      load_dx_coefficients(sc, c, ch0, count, k1s, k2s, k3s);
    }
    for_each_nhwc_item(ch0, n, c, h, w, from_end, [&](const NhwcItem<I>& it) {
      const ItemPacks<T> vm = load_item(xm, it.stored, c);
      const ItemPacks<T> vs = load_item(xs, it.stored, c);
      const ItemPacks<T> gv = load_item(dy, it.stored, c);
      const uint32_t positive = positive_bits[it.word];
      ItemPacks<T> om, os;
#pragma unroll
      for (int q = 0; q < kRun; ++q)
#pragma unroll
        for (int j = 0; j < kGroup; ++j) {
          const float g = (positive >> (q * kGroup + j)) & 1u ? to_float(gv.v[q].v[j]) : 0.0f;
          const float fm = to_float(vm.v[q].v[j]), fs = to_float(vs.v[q].v[j]);
          if constexpr (Dx) {
            om.v[q].v[j] = from_float<T>(k1m[j] * g - k2m[j] - k3m[j] * (fm - mean_m[j]));
            os.v[q].v[j] = from_float<T>(k1s[j] * g - k2s[j] - k3s[j] * (fs - mean_s[j]));
          } else {
            g_sum[j] += g;
            s2m[j] = fmaf(g, fm - mean_m[j], s2m[j]);
            s2s[j] = fmaf(g, fs - mean_s[j], s2s[j]);
          }
        }
      if constexpr (Dx) {
        store_item(dxm, it.stored, c, om);
        store_item(dxs, it.stored, c, os);
      }
    });
  }
  if constexpr (!Dx) {
    reduce_columns(g_sum, s2m, active, ch0, c, carve(m.workspace, c).partials);
    __syncthreads();  // the block's shared partials are reused
    reduce_columns(g_sum, s2s, active, ch0, c, carve(sc.workspace, c).partials);
  }
}

// ---- NCHW traversal: blockIdx.x = channel; quad q of the channel is image q / (h*w/4), at (q % (h*w/4)) * 4 ----

template <typename I>
__device__ __forceinline__ I nchw_offset(I q, I ch, I c, I plane) {
  const I quads = plane / kRun;
  return ((q / quads) * c + ch) * plane + (q % quads) * kRun;
}

template <typename T>
__device__ __forceinline__ Quad<T> load_quad(const T* p, int64_t at) {
  return *reinterpret_cast<const Quad<T>*>(p + at);
}

// Calls f(offset, words) for each quad of the thread's items in channel ch, with the quad's Philox words.
template <bool Drop, typename I, typename F>
__device__ __forceinline__ void for_each_nchw_quad(I ch, I n, I c, I plane, const DropoutMask& d, F&& f) {
  const uint64_t step = Drop ? mask_step(d) : 0;
  const I items = n * (plane / kRun);
  for (I q = static_cast<I>(blockIdx.y * blockDim.x + threadIdx.x); q < items;
       q += static_cast<I>(gridDim.y * blockDim.x)) {
    const I at = nchw_offset(q, ch, c, plane);
    Philox4 words{};
    if constexpr (Drop) words = mask_words(d, step, static_cast<uint64_t>(at) / kRun);
    f(at, words);
  }
}

template <typename T, typename I>
__global__ void stats_nchw_kernel(const T* x, I n, I c, I plane, Workspace ws) {
  const I ch = static_cast<I>(blockIdx.x);
  const float shift = to_float(x[ch * plane]);
  float s1 = 0.0f, s2 = 0.0f;
  const I items = n * (plane / kRun);
  for (I q = static_cast<I>(blockIdx.y * blockDim.x + threadIdx.x); q < items;
       q += static_cast<I>(gridDim.y * blockDim.x)) {
    const Quad<T> v = load_quad(x, nchw_offset(q, ch, c, plane));
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      const float dv = to_float(v.v[k]) - shift;
      s1 += dv;
      s2 = fmaf(dv, dv, s2);
    }
  }
  if (blockIdx.y == 0 && threadIdx.x == 0) ws.shift[ch] = shift;
  reduce_block(s1, s2, ch, c, ws.partials);
}

template <typename T, typename I, Keep K>
__global__ void apply_nchw_kernel(I n, I c, I plane, BnApply a, DropoutMask d) {
  constexpr bool Drop = K != Keep::All;
  const I ch = static_cast<I>(blockIdx.x);
  const T* x = static_cast<const T*>(a.x);
  const T* res = static_cast<const T*>(a.residual);
  T* y = static_cast<T*>(a.y);
  const float ca = a.a[ch], cb = a.b[ch], cr = a.residual_bias ? a.residual_bias[ch] : 0.0f;
  const float cs = a.residual_scale ? a.residual_scale[ch] : 1.0f;
  const ReluPlace relu(a);
  for_each_nchw_quad<Drop>(ch, n, c, plane, d, [&](I at, const Philox4& words) {
    const Quad<T> v = load_quad(x, at);
    Quad<T> r;
    if (res) r = load_quad(res, at);
    Quad<T> out;
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      const float rk = res ? fmaf(to_float(r.v[k]), cs, cr) : 0.0f;
      out.v[k] = from_float<T>(output_value<Drop>(to_float(v.v[k]), ca, cb, relu,
                                                  mask_keeps(words.v[k], d.threshold), d.scale, res != nullptr, rk));
    }
    *reinterpret_cast<Quad<T>*>(y + at) = out;
  });
}

template <typename T, typename I, Keep K, bool Dx>
__global__ void backward_nchw_kernel(I n, I c, I plane, BnBackward a, DropoutMask d) {
  constexpr bool Drop = K != Keep::All;
  const I ch = static_cast<I>(blockIdx.x);
  const T* x = static_cast<const T*>(a.x);
  const T* dy = static_cast<const T*>(a.dy);
  T* dx = static_cast<T*>(a.dx);
  const float ca = a.a[ch], cb = a.b[ch], mean = a.saved_mean[ch];
  DxCoefficients k{};
  if constexpr (Dx) k = dx_coefficients(a, c, ch, static_cast<double>(n) * static_cast<double>(plane));
  float s1 = 0.0f, s2 = 0.0f;
  for_each_nchw_quad<Drop>(ch, n, c, plane, d, [&](I at, const Philox4& words) {
    const Quad<T> xv = load_quad(x, at), gv = load_quad(dy, at);
    Quad<T> out;
#pragma unroll
    for (int j = 0; j < kRun; ++j) {
      const float xf = to_float(xv.v[j]);
      const float g =
          bn_output_grad<Drop>(to_float(gv.v[j]), xf, ca, cb, a.relu, mask_keeps(words.v[j], d.threshold), d.scale);
      if constexpr (Dx) {
        out.v[j] = from_float<T>(k.k1 * g - k.k2 - k.k3 * (xf - mean));
      } else {
        s1 += g;
        s2 = fmaf(g, xf - mean, s2);
      }
    }
    if constexpr (Dx) *reinterpret_cast<Quad<T>*>(dx + at) = out;
  });
  if constexpr (!Dx) reduce_block(s1, s2, ch, c, carve(a.workspace, c).partials);
}

// ---- the combine of the partial sums: [rows][2c] floats -> two double sums per channel ----

// A block of 32 x 32 threads takes 32 channels (one per lane, so that a warp reads 128 contiguous bytes of a
// row). Warps [0, 16) add up the first sums' rows w, w + 16, ... of their lane's channel and warps [16, 32)
// the second sums', each in row order; then warp 0 adds the 16 subtotals of each in order. Every sum is
// thus added in the same order on every run, however the rows were written.
constexpr int kCombineLanes = 32, kCombineWarps = 32, kCombineSplit = kCombineWarps / 2;

template <typename Finish>
__global__ void __launch_bounds__(kCombineLanes * kCombineWarps)
    combine_kernel(Workspace ws, int64_t c, int64_t rows, Finish finish) {
  __shared__ double subtotal[kCombineWarps][kCombineLanes];
  const int lane = threadIdx.x, warp = threadIdx.y;
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * kCombineLanes + lane;
  double total = 0.0;
  if (ch < c) {
    const float* column = ws.partials + (warp < kCombineSplit ? ch : c + ch);
    const int64_t stride = 2 * c;
#pragma unroll 8
    for (int64_t r = warp % kCombineSplit; r < rows; r += kCombineSplit) total += column[r * stride];
  }
  subtotal[warp][lane] = total;
  __syncthreads();
  if (warp != 0 || ch >= c) return;
  double s1 = 0.0, s2 = 0.0;
  for (int k = 0; k < kCombineSplit; ++k) {
    s1 += subtotal[k][lane];
    s2 += subtotal[kCombineSplit + k][lane];
  }
  finish(ws, c, ch, s1, s2);
}

// Forward: the statistics from the sums of (x - shift) and (x - shift)^2 (bn_finalize_statistics).
struct FinalizeStatistics {
  BnFinalize f;
  int64_t count;
  __device__ void operator()(const Workspace& ws, int64_t c, int64_t ch, double s1, double s2) const {
    const double m_count = static_cast<double>(count);
    const double centred = s1 / m_count;  // mean - shift
    const double var = fmax(s2 / m_count - centred * centred, 0.0);
    bn_finalize_channel(f, ch, static_cast<double>(ws.shift[ch]) + centred, var, m_count);
  }
};

// Backward: the sums for the dx pass, and the parameter gradients dbias = sum g, dscale = sum g * xhat.
struct BackwardSums {
  const float* saved_inv_std;
  float* dscale;
  float* dbias;
  __device__ void operator()(const Workspace& ws, int64_t c, int64_t ch, double s1, double s2) const {
    ws.sums[ch] = s1;
    ws.sums[c + ch] = s2;
    dbias[ch] = static_cast<float>(s1);
    dscale[ch] = static_cast<float>(s2 * saved_inv_std[ch]);
  }
};

bool positive_shape(const BnFusedShape& s) { return s.n > 0 && s.c > 0 && s.h > 0 && s.w > 0; }

// The shape the passes walk: an NHWC tensor whose rows do not split into items of 4 w is one row of n*h*w
// pixels (the same memory; only the dropout's Philox groups and keep bits need the real rows, so such a
// tensor takes no dropout).
BnFusedShape walked(const BnFusedShape& s) {
  if (s.layout != Layout::NHWC || s.w % kRun == 0) return s;
  BnFusedShape row = s;
  row.n = 1;
  row.h = 1;
  row.w = s.n * s.h * s.w;
  return row;
}

// ---- launch geometry ----

// Where each NHWC pass starts (for_each_nhwc_item). A convolution writes its output from the first pixel to
// the last, so L2 still holds the end of it: the passes that read a convolution's output first (the
// statistics of its x; the backward's sums, of the dgrad's dy) start at the end, and the pass after each
// starts at the start, where that one ended. An apply pass starts at the end where it reads x first
// (BnApply::from_end: the convolution summed x itself).
constexpr bool kSumsFromEnd = true;
constexpr bool kDxFromEnd = false;
// A backward pass: the sums read the dgrad's dy first, the dx pass follows them.
template <bool Dx>
constexpr bool backward_from_end() {
  return Dx ? kDxFromEnd : kSumsFromEnd;
}

struct Geometry {
  dim3 grid, block;
};

// NHWC: x covers the channel groups (all of them in one block up to 256 groups, so that a warp reads
// contiguous memory and no lane idles), y the items; `blocks` caps the grid.
Geometry nhwc_geometry(const BnFusedShape& s, int64_t blocks) {
  const int64_t groups = s.c / kGroup;
  const int64_t gx = (groups + kThreads - 1) / kThreads;
  const int bx = static_cast<int>((groups + gx - 1) / gx);
  const int by = std::max(1, kThreads / bx);
  const int64_t items = s.n * s.h * (s.w / kRun);
  Geometry g;
  g.block = dim3(static_cast<unsigned>(bx), static_cast<unsigned>(by));
  const int64_t gy = std::clamp<int64_t>(std::min((items + by - 1) / by, blocks / gx), 1, 65535);
  g.grid = dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
  return g;
}

// NCHW: x over channels, y over each channel's quads, about two waves.
Geometry nchw_geometry(const BnFusedShape& s) {
  const int64_t budget = std::max<int64_t>(1, grid_for(int64_t{1} << 40) / 2);
  const int64_t items = s.n * (s.h * s.w / kRun);
  const int64_t gy = std::clamp<int64_t>(std::min((items + kThreads - 1) / kThreads, budget / s.c), 1, 65535);
  Geometry g;
  g.block = dim3(kThreads);
  g.grid = dim3(static_cast<unsigned>(s.c), static_cast<unsigned>(gy));
  return g;
}

// The geometry of the reduction passes (statistics, backward sums): one row of partial sums per blockIdx.y,
// so the workspace's size and the combine follow from it. NHWC takes one wave at the kernels' launch bounds.
Geometry reduction_geometry(const BnFusedShape& s) {
  return s.layout == Layout::NHWC ? nhwc_geometry(s, int64_t{multiprocessor_count()} * kReduceBlocksPerSm) : nchw_geometry(s);
}

// The geometry of an element pass (apply, dx): NHWC takes one wave at the kernels' launch bounds (their
// registers allow no more), NCHW the reductions' grid.
Geometry element_geometry(const BnFusedShape& s) {
  return s.layout == Layout::NHWC ? nhwc_geometry(s, int64_t{multiprocessor_count()} * kElementBlocksPerSm) : nchw_geometry(s);
}

// The backward sums' pass: the reduction geometry, or the element passes' where it masks the following
// ReLU's gradient (its launch bound; fewer rows of partial sums, which the workspace holds).
Geometry backward_reduce_geometry(const BnFusedShape& s, bool masks_relu) {
  return masks_relu ? element_geometry(s) : reduction_geometry(s);
}

// Adds up the `rows` rows of partial sums that a reduction pass left in the workspace.
template <typename Finish>
void combine(const BnFusedShape& s, void* workspace, unsigned rows, const Finish& finish, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>((s.c + kCombineLanes - 1) / kCombineLanes);
  combine_kernel<<<blocks, dim3(kCombineLanes, kCombineWarps), 0, stream>>>(carve(workspace, s.c), s.c, rows, finish);
  CHECK_CUDA_LAUNCH();
}

void require_supported(const BnFusedShape& s, bool dropout, std::initializer_list<const void*> tensors,
                       const char* what) {
  if (!bn_fused_supports(s, dropout, tensors))
    fatal(std::string(what) + ": tensor [" + std::to_string(s.n) + ", " + std::to_string(s.c) + ", " +
          std::to_string(s.h) + ", " + std::to_string(s.w) + "] " + layout_name(s.layout) +
          " is not supported" + (dropout ? " with dropout" : "") + " (check bn_fused_supports first)");
}

// Calls f(TypeTag<T>, TypeTag<I>) with the element type and the index type of index_type.cuh.
template <typename F>
void dispatch_types(const BnFusedShape& s, F&& f) {
  dispatch_dtype(s.dtype, [&](auto tag) { dispatch_index(s.n * s.c * s.h * s.w, [&](auto index) { f(tag, index); }); });
}

// Whether bits given as 32-bit words (keep bits, a ReLU's positive bits) are aligned for them.
bool word_aligned(const uint32_t* bits) { return reinterpret_cast<uintptr_t>(bits) % alignof(uint32_t) == 0; }

DropoutMask mask_of(const BnFusedShape& s, const BnDropout& d, const char* what) {
  if (d.keep_bits && bn_fused_mask_bytes(s) == 0)
    fatal(std::string(what) + ": keep bits given for a " + layout_name(s.layout) +
          " tensor, which stores none (bn_fused_mask_bytes is 0)");
  if (d.keep_bits && !word_aligned(d.keep_bits))
    fatal(std::string(what) + ": the keep bits are not aligned to 4 bytes");
  return make_dropout_mask(d.p, d.mask_key, d.step, d.step_device, d.first_element, "fused batch norm dropout");
}

// The template arguments of an element pass: element type, index type, source of the dropout decisions.
template <typename Element, typename Index, Keep K>
struct PassTypes {
  using T = Element;
  using I = Index;
  static constexpr Keep keep = K;
};

// Calls f(PassTypes<...>{}) to launch an element pass, then checks the launch. ReadsBits: the pass takes
// stored keep bits where the dropout has them (the backward passes), else it draws.
template <bool ReadsBits, typename F>
void dispatch_element_pass(const BnFusedShape& s, const BnDropout& dropout, F&& f) {
  dispatch_types(s, [&](auto type, auto index) {
    using T = typename decltype(type)::type;
    using I = typename decltype(index)::type;
    if (dropout.p <= 0.0) f(PassTypes<T, I, Keep::All>{});
    else if constexpr (ReadsBits) {
      if (dropout.keep_bits) f(PassTypes<T, I, Keep::Bits>{});
      else f(PassTypes<T, I, Keep::Philox>{});
    } else {
      f(PassTypes<T, I, Keep::Philox>{});
    }
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace

bool bn_fused_supports(const BnFusedShape& s, bool dropout, std::initializer_list<const void*> tensors) {
  if (!positive_shape(s)) return false;
  const size_t element = dtype_size(s.dtype);
  const bool nhwc = s.layout == Layout::NHWC;
  if (nhwc && (s.c % kGroup != 0 || walked(s).w % kRun != 0)) return false;
  if (nhwc && dropout && s.w % kRun != 0) return false;
  if (!nhwc && (s.h * s.w) % kRun != 0) return false;
  const uintptr_t alignment = nhwc ? 16 : kRun * element;
  for (const void* p : tensors)
    if (p && reinterpret_cast<uintptr_t>(p) % alignment != 0) return false;
  return true;
}

size_t bn_fused_workspace_bytes(const BnFusedShape& shape) {
  if (!positive_shape(shape)) return 0;
  const BnFusedShape s = walked(shape);
  const auto c = static_cast<size_t>(s.c);
  return 2 * c * sizeof(double) + c * sizeof(float) + reduction_geometry(s).grid.y * 2 * c * sizeof(float);
}

size_t bn_fused_mask_bytes(const BnFusedShape& s) {
  if (!positive_shape(s) || s.layout != Layout::NHWC) return 0;
  return static_cast<size_t>(s.n * s.c * s.h * s.w / kGroup);  // one bit per element
}

void bn_channel_statistics(const BnFusedShape& shape, const BnStatistics& a, cudaStream_t stream) {
  require_supported(shape, false, {a.x}, "bn_channel_statistics");
  const BnFusedShape s = walked(shape);
  const Geometry g = reduction_geometry(s);
  const Workspace ws = carve(a.workspace, s.c);
  dispatch_types(s, [&](auto type, auto index) {
    using T = typename decltype(type)::type;
    using I = typename decltype(index)::type;
    const T* x = static_cast<const T*>(a.x);
    if (s.layout == Layout::NHWC)
      stats_nhwc_kernel<T, I><<<g.grid, g.block, 0, stream>>>(x, I(s.n), I(s.c), I(s.h), I(s.w), ws, kSumsFromEnd);
    else
      stats_nchw_kernel<T, I><<<g.grid, g.block, 0, stream>>>(x, I(s.n), I(s.c), I(s.h * s.w), ws);
  });
  CHECK_CUDA_LAUNCH();
}

void bn_finalize_statistics(const BnFusedShape& shape, const BnFinalize& f, cudaStream_t stream) {
  const BnFusedShape s = walked(shape);
  const int64_t count = s.n * s.h * s.w;
  if (!positive_shape(s) || count <= 1)
    fatal("bn_finalize_statistics: needs more than one value per channel, got " + std::to_string(count));
  combine(s, const_cast<void*>(f.workspace), reduction_geometry(s).grid.y, FinalizeStatistics{f, count}, stream);
}

void bn_apply_forward(const BnFusedShape& shape, const BnApply& a, cudaStream_t stream) {
  require_supported(shape, a.dropout.p > 0.0, {a.x, a.y, a.residual}, "bn_apply_forward");
  if (a.relu_after_residual && (!a.residual || !a.relu || a.dropout.p > 0.0))
    fatal("bn_apply_forward: relu_after_residual needs a residual and relu, and takes no dropout");
  if ((a.residual_bias || a.residual_scale) && !a.residual)
    fatal("bn_apply_forward: a residual bias or scale without a residual");
  if (a.relu_bits && (shape.layout != Layout::NHWC || !word_aligned(a.relu_bits)))
    fatal("bn_apply_forward: the ReLU's bits are stored under NHWC only, aligned to 4 bytes");
  if (a.sum && (shape.layout != Layout::NHWC || !a.sqsum || shape.n * shape.h * shape.w <= 1))
    fatal("bn_apply_forward: finalizing given sums needs NHWC, both sums and more than one value per channel");
  const DropoutMask d = mask_of(shape, a.dropout, "bn_apply_forward");
  const BnFusedShape s = walked(shape);
  dispatch_element_pass<false>(s, a.dropout, [&](auto types) {
    using K = decltype(types);
    using T = typename K::T;
    using I = typename K::I;
    const Geometry g = element_geometry(s);
    if (s.layout == Layout::NHWC)
      apply_nhwc_kernel<T, I, K::keep><<<g.grid, g.block, 0, stream>>>(I(s.n), I(s.c), I(s.h), I(s.w), a, d);
    else
      apply_nchw_kernel<T, I, K::keep><<<g.grid, g.block, 0, stream>>>(I(s.n), I(s.c), I(s.h * s.w), a, d);
  });
}

namespace {
// A backward that routes a max pool's gradient: the pool on that shape, with its positions and a ReLU of the
// run's own, and nothing else to mask.
void require_pool(const BnFusedShape& s, const BnBackward& a, const char* what) {
  if (a.pool.kernel <= 0) return;
  if (!bn_maxpool_supports(s, a.pool, {a.x, a.dy, a.dx}) || !a.pool.positions || !a.relu || a.relu_output_bits ||
      a.dropout.p > 0.0)
    fatal(std::string(what) + ": the max pool " + std::to_string(a.pool.kernel) + "/" + std::to_string(a.pool.stride) +
          "/" + std::to_string(a.pool.pad) + " after this run is not supported here (check bn_maxpool_supports; it needs "
          "its positions, the run's ReLU, and no dropout or following ReLU)");
}

// Returns the geometry it launched: pass 1's rows of partial sums are those combine() must add up.
template <bool Dx>
Geometry launch_backward(const BnFusedShape& shape, const BnBackward& a, const char* what, cudaStream_t stream) {
  const DropoutMask d = mask_of(shape, a.dropout, what);
  const BnFusedShape s = walked(shape);
  const bool masks_relu = !Dx && a.relu_output_bits;
  const bool pooled = a.pool.kernel > 0;
  const Geometry g = Dx ? element_geometry(s) : backward_reduce_geometry(s, masks_relu || pooled);
  constexpr bool from_end = backward_from_end<Dx>();
  dispatch_element_pass<true>(s, a.dropout, [&](auto types) {
    using K = decltype(types);
    using T = typename K::T;
    using I = typename K::I;
    if constexpr (K::keep == Keep::All) {
      if (pooled) {  // NHWC with real rows (require_pool checks)
        if (bn_maxpool_is_stem_pool(a.pool))
          backward_nhwc_kernel<T, I, Keep::All, Dx, false, PoolRoute::Stem>
              <<<g.grid, g.block, 0, stream>>>(I(s.n), I(s.c), I(s.h), I(s.w), a, d, from_end);
        else
          backward_nhwc_kernel<T, I, Keep::All, Dx, false, PoolRoute::Any>
              <<<g.grid, g.block, 0, stream>>>(I(s.n), I(s.c), I(s.h), I(s.w), a, d, from_end);
        return;
      }
    }
    if constexpr (!Dx && K::keep == Keep::All) {
      if (masks_relu) {  // NHWC (bn_backward_reduce checks)
        backward_nhwc_kernel<T, I, Keep::All, false, true>
            <<<g.grid, g.block, 0, stream>>>(I(s.n), I(s.c), I(s.h), I(s.w), a, d, from_end);
        return;
      }
    }
    if (s.layout == Layout::NHWC)
      backward_nhwc_kernel<T, I, K::keep, Dx>
          <<<g.grid, g.block, 0, stream>>>(I(s.n), I(s.c), I(s.h), I(s.w), a, d, from_end);
    else
      backward_nchw_kernel<T, I, K::keep, Dx><<<g.grid, g.block, 0, stream>>>(I(s.n), I(s.c), I(s.h * s.w), a, d);
  });
  return g;
}
}  // namespace

void bn_backward_reduce(const BnFusedShape& s, const BnBackward& a, cudaStream_t stream) {
  require_supported(s, a.dropout.p > 0.0, {a.x, a.dy}, "bn_backward_reduce");
  require_pool(s, a, "bn_backward_reduce");
  if (a.relu_output_bits && (s.layout != Layout::NHWC || a.relu || a.dropout.p > 0.0 || a.dy_in_place != a.dy ||
                             !word_aligned(a.relu_output_bits)))
    fatal("bn_backward_reduce: masking by relu_output_bits needs NHWC, aligned bits, no ReLU or dropout of the "
          "run's own, and dy_in_place == dy");
  const Geometry g = launch_backward<false>(s, a, "bn_backward_reduce", stream);
  combine(walked(s), a.workspace, g.grid.y, BackwardSums{a.saved_inv_std, a.dscale, a.dbias}, stream);
}

void bn_backward_dx(const BnFusedShape& s, const BnBackward& a, cudaStream_t stream) {
  require_supported(s, a.dropout.p > 0.0, {a.x, a.dy, a.dx}, "bn_backward_dx");
  require_pool(s, a, "bn_backward_dx");
  launch_backward<true>(s, a, "bn_backward_dx", stream);
}

namespace {
void require_pair(const BnFusedShape& s, const BnBackward& m, const BnBackward& sc, const char* what) {
  require_supported(s, false, {m.x, sc.x, m.dy, m.dx, sc.dx}, what);
  const bool plain = !m.relu && !sc.relu && m.dropout.p <= 0.0 && sc.dropout.p <= 0.0 && m.pool.kernel <= 0 &&
                     sc.pool.kernel <= 0;
  if (s.layout != Layout::NHWC || !m.relu_output_bits || !word_aligned(m.relu_output_bits) || !plain ||
      m.workspace == sc.workspace || sc.dx == m.dy || sc.dx == m.dx)
    fatal(std::string(what) + ": a pair needs NHWC, the ReLU's aligned bits (main.relu_output_bits), no ReLU, "
          "dropout or pool of the runs' own, a workspace each, and the shortcut's dx apart from dy and main's dx");
}

// Returns the geometry it launched: pass 1's rows of partial sums are those combine() must add up.
template <bool Dx>
Geometry launch_pair(const BnFusedShape& shape, const BnBackward& m, const BnBackward& sc, cudaStream_t stream) {
  const BnFusedShape s = walked(shape);
  const Geometry g = nhwc_geometry(s, int64_t{multiprocessor_count()} * pair_blocks_per_sm<Dx>());
  dispatch_types(s, [&](auto type, auto index) {
    using T = typename decltype(type)::type;
    using I = typename decltype(index)::type;
    pair_backward_nhwc_kernel<T, I, Dx>
        <<<g.grid, g.block, 0, stream>>>(I(s.n), I(s.c), I(s.h), I(s.w), m, sc, backward_from_end<Dx>());
  });
  CHECK_CUDA_LAUNCH();
  return g;
}
}  // namespace

void bn_backward_pair_reduce(const BnFusedShape& s, const BnBackward& main, const BnBackward& shortcut,
                             cudaStream_t stream) {
  require_pair(s, main, shortcut, "bn_backward_pair_reduce");
  const Geometry g = launch_pair<false>(s, main, shortcut, stream);
  combine(walked(s), main.workspace, g.grid.y, BackwardSums{main.saved_inv_std, main.dscale, main.dbias}, stream);
  combine(walked(s), shortcut.workspace, g.grid.y,
          BackwardSums{shortcut.saved_inv_std, shortcut.dscale, shortcut.dbias}, stream);
}

void bn_backward_pair_dx(const BnFusedShape& s, const BnBackward& main, const BnBackward& shortcut,
                         cudaStream_t stream) {
  require_pair(s, main, shortcut, "bn_backward_pair_dx");
  launch_pair<true>(s, main, shortcut, stream);
}

}  // namespace sb::kernels
