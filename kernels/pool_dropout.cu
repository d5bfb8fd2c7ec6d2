#include <type_traits>

#include "kernels/device_utils.cuh"
#include "kernels/dropout_mask.cuh"
#include "kernels/index_type.cuh"
#include "kernels/partial_sums.h"
#include "kernels/pool_dropout.h"

namespace sb::kernels {
namespace {
using namespace detail;

// A thread takes 4 pool outputs that are consecutive in the flattened (c, h, w) order, so that one Philox
// draw (4 words for 4 consecutive mask indices) masks all of them where they start a group of 4.
constexpr int kGroup = 4;
// NHWC: a block's tile is kTile pool outputs of one sample, kTile / c consecutive positions by all c
// channels, read channel-fastest from z and written through shared memory in the (c, h, w) order.
constexpr int kTile = kGroup * kThreads;

// The shape in the kernels' index type I; c is a power of two, so channel arithmetic is shifts and masks.
template <typename I>
struct Geometry {
  I n, c, h, w;   // z
  I pw, phw;      // the pool output's columns and positions per channel
  int c_shift;    // log2(c)
  int tile_positions, tile_positions_shift;  // NHWC: positions per tile (kTile / c) and its log2
  bool groups_aligned;                       // phw % 4 == 0: a run of 4 positions from a multiple of 4 is one draw
};

template <typename I>
Geometry<I> geometry_of(const PoolDropoutShape& s) {
  Geometry<I> g;
  g.n = static_cast<I>(s.n);
  g.c = static_cast<I>(s.c);
  g.h = static_cast<I>(s.h);
  g.w = static_cast<I>(s.w);
  g.pw = static_cast<I>(s.w / 2);
  g.phw = static_cast<I>((s.h / 2) * (s.w / 2));
  g.c_shift = log2_of_power_of_two(s.c);
  g.tile_positions = static_cast<int>(kTile / s.c);
  g.tile_positions_shift = log2_of_power_of_two(kTile / s.c);
  g.groups_aligned = g.phw % kGroup == 0;
  return g;
}

// relu(z + bias) at the 4 elements of pool window (ph, pw) of channel c, z + bias rounded to T as the bias
// pass stores it; at: the elements' offsets in z.
template <typename T, typename I, bool kNhwc>
__device__ __forceinline__ void load_window(const T* z, float b, const Geometry<I>& g, I n, I c, I pos, I at[4],
                                            float v[4]) {
  const I ph = pos / g.pw, pw = pos - ph * g.pw;
  if (kNhwc) {
    at[0] = ((n * g.h + 2 * ph) * g.w + 2 * pw) * g.c + c;
    at[1] = at[0] + g.c;
    at[2] = at[0] + g.w * g.c;
    at[3] = at[2] + g.c;
  } else {
    at[0] = ((n * g.c + c) * g.h + 2 * ph) * g.w + 2 * pw;
    at[1] = at[0] + 1;
    at[2] = at[0] + g.w;
    at[3] = at[2] + 1;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float zb = to_float(from_float<T>(to_float(z[at[j]]) + b));
    v[j] = zb > 0.0f ? zb : 0.0f;
  }
}

// The first maximum of the window, as the max-pool kernels and the CPU find it.
__device__ __forceinline__ int arg_max(const float v[4]) {
  int best = 0;
#pragma unroll
  for (int j = 1; j < 4; ++j)
    if (v[j] > v[best]) best = j;
  return best;
}

// Bit j: whether mask index first + j is kept (j < 4). `aligned`: first is a multiple of 4, so one draw
// serves all four; else each index is drawn on its own.
template <bool Drop>
__device__ __forceinline__ uint32_t keep_bits(const DropoutMask& d, uint64_t step, uint64_t first, bool aligned) {
  if (!Drop) return 0xFu;
  uint32_t bits = 0;
  if (aligned) {
    const Philox4 r = mask_words(d, step, first >> 2);
#pragma unroll
    for (int j = 0; j < 4; ++j) bits |= static_cast<uint32_t>(mask_keeps(r.v[j], d.threshold)) << j;
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) bits |= static_cast<uint32_t>(mask_keeps_at(d, step, first + j)) << j;
  }
  return bits;
}

// The pool output as the dropout leaves it.
template <typename T, bool Drop>
__device__ __forceinline__ T dropped(float m, bool keep, const DropoutMask& d) {
  return keep ? from_float<T>(Drop ? m * d.scale : m) : from_float<T>(0.0f);
}

// The pool output's flattened (and mask) index of position pos of channel c in sample n.
template <typename I>
__device__ __forceinline__ I flat_index(const Geometry<I>& g, I n, I c, I pos) {
  return (n * g.c + c) * g.phw + pos;
}

// The keep bits of positions pos .. pos + 3 of channel c in sample n (consecutive mask indices).
template <bool Drop, typename I>
__device__ __forceinline__ uint32_t run_keep_bits(const DropoutMask& d, uint64_t step, const Geometry<I>& g, I n, I c,
                                                  I pos) {
  return keep_bits<Drop>(d, step, static_cast<uint64_t>(flat_index(g, n, c, pos)), g.groups_aligned);
}

// NHWC: the sample and first position of a tile.
template <typename I>
struct TilePlace {
  I n, pos0;
};
template <typename I>
__device__ __forceinline__ TilePlace<I> tile_place(const Geometry<I>& g, I tile, I tiles_per_sample) {
  const I n = tile / tiles_per_sample;
  return TilePlace<I>{n, (tile - n * tiles_per_sample) * g.tile_positions};
}

// NCHW: the flattened output is the pool output in storage order; thread per 4 consecutive outputs.
template <typename T, typename I, bool Drop>
__global__ void __launch_bounds__(kThreads)
    pool_dropout_forward_nchw_kernel(const T* __restrict__ z, const float* __restrict__ bias, T* __restrict__ y,
                                     Geometry<I> g, DropoutMask d, I total) {
  const uint64_t step = Drop ? mask_step(d) : 0;
  const I groups = (total + kGroup - 1) / kGroup;
  for (I group = static_cast<I>(blockIdx.x) * kThreads + threadIdx.x; group < groups;
       group += static_cast<I>(gridDim.x) * kThreads) {
    const uint32_t keep = keep_bits<Drop>(d, step, static_cast<uint64_t>(group) * kGroup, true);
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      const I i = group * kGroup + j;
      if (i >= total) break;
      const I plane = i / g.phw, c = plane & (g.c - 1);
      I at[4];
      float v[4];
      load_window<T, I, false>(z, bias[c], g, plane >> g.c_shift, c, i - plane * g.phw, at, v);
      y[i] = dropped<T, Drop>(v[arg_max(v)], (keep >> j) & 1u, d);
    }
  }
}

// NHWC: thread t keeps channel t % c and takes 4 consecutive positions of a tile (a warp's loads of z are
// consecutive channels); the tile's outputs go through shared memory so that the stores follow the (c, h, w)
// order. Rows of the shared tile are padded by one against bank conflicts.
template <typename T, typename I, bool Drop>
__global__ void __launch_bounds__(kThreads)
    pool_dropout_forward_nhwc_kernel(const T* __restrict__ z, const float* __restrict__ bias, T* __restrict__ y,
                                     Geometry<I> g, DropoutMask d, I tiles, I tiles_per_sample) {
  __shared__ float out[kTile + kThreads];  // [c][tile_positions + 1]
  const uint64_t step = Drop ? mask_step(d) : 0;
  const int row = g.tile_positions + 1;
  const I c = static_cast<I>(threadIdx.x) & (g.c - 1);
  const int first = static_cast<int>(threadIdx.x >> g.c_shift) * kGroup;
  const float b = bias[c];
  for (I tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const TilePlace<I> place = tile_place(g, tile, tiles_per_sample);
    const I pos = place.pos0 + first;
    const uint32_t keep = run_keep_bits<Drop>(d, step, g, place.n, c, pos);
#pragma unroll
    for (int j = 0; j < kGroup && pos + j < g.phw; ++j) {
      I at[4];
      float v[4];
      load_window<T, I, true>(z, b, g, place.n, c, pos + j, at, v);
      out[c * row + first + j] = to_float(dropped<T, Drop>(v[arg_max(v)], (keep >> j) & 1u, d));
    }
    __syncthreads();
    for (int e = threadIdx.x; e < kTile; e += kThreads) {
      const int p = e & (g.tile_positions - 1), oc = e >> g.tile_positions_shift;
      if (place.pos0 + p < g.phw)
        y[flat_index(g, place.n, static_cast<I>(oc), place.pos0 + p)] = from_float<T>(out[oc * row + p]);
    }
    __syncthreads();
  }
}

// dz at a window's 4 elements: g at the arg-max, 0 elsewhere.
template <typename T, typename I>
__device__ __forceinline__ void store_window_gradient(T* dz, const I at[4], int best, float g) {
#pragma unroll
  for (int j = 0; j < 4; ++j) dz[at[j]] = from_float<T>(j == best ? g : 0.0f);
}

// The gradient the arg-max gets from dy when the window's maximum is positive and kept, rounded to T as the
// dropout's backward stores it.
template <typename T, bool Drop>
__device__ __forceinline__ float pooled_gradient(float dyv, const DropoutMask& d) {
  return to_float(from_float<T>(Drop ? dyv * d.scale : dyv));
}

// Block-wide sum of each channel's lanes in a fixed tree: thread t holds channel t % channels' lane
// t / channels (channels a power of two up to kThreads); returns with sums[ch] the block's total of ch.
__device__ __forceinline__ void sum_channel_lanes(float* sums, float acc, int channels) {
  const int t = static_cast<int>(threadIdx.x);
  sums[t] = acc;
  __syncthreads();
  for (int half = kThreads / 2; half >= channels; half >>= 1) {
    if (t < half) sums[t] += sums[t + half];
    __syncthreads();
  }
}

// NCHW: block (x, c) takes channel c's outputs x, x + gridDim.x, ... in groups of 4, so that its threads'
// gradients all belong to one channel; the block's sum is partial row x's entry c.
template <typename T, typename I, bool Drop>
__global__ void __launch_bounds__(kThreads)
    pool_dropout_backward_nchw_kernel(const T* __restrict__ z, const float* __restrict__ bias,
                                      const T* __restrict__ dy, T* __restrict__ dz, float* __restrict__ partials,
                                      Geometry<I> g, DropoutMask d) {
  __shared__ float sums[kThreads];
  const uint64_t step = Drop ? mask_step(d) : 0;
  const I c = blockIdx.y, outputs = g.n * g.phw;  // this channel's
  const float b = bias[c];
  float acc = 0.0f;
  for (I e0 = (static_cast<I>(blockIdx.x) * kThreads + threadIdx.x) * kGroup; e0 < outputs;
       e0 += static_cast<I>(gridDim.x) * kThreads * kGroup) {
    // With phw % 4 == 0 the group lies in one sample and one draw masks it; else each output draws its own.
    const I n0 = e0 / g.phw;
    const uint32_t keep_group = g.groups_aligned ? run_keep_bits<Drop>(d, step, g, n0, c, e0 - n0 * g.phw) : 0u;
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      const I e = e0 + j;
      if (e >= outputs) break;
      const I n = e / g.phw, pos = e - n * g.phw, flat = flat_index(g, n, c, pos);
      I at[4];
      float v[4];
      load_window<T, I, false>(z, b, g, n, c, pos, at, v);
      const int best = arg_max(v);
      const bool keep = !Drop || (g.groups_aligned ? ((keep_group >> j) & 1u) != 0
                                                    : mask_keeps_at(d, step, static_cast<uint64_t>(flat)));
      float grad = 0.0f;
      if (v[best] > 0.0f && keep) grad = pooled_gradient<T, Drop>(to_float(dy[flat]), d);
      store_window_gradient(dz, at, best, grad);
      acc += grad;
    }
  }
  sum_channel_lanes(sums, acc, 1);
  if (threadIdx.x == 0) partials[static_cast<int64_t>(blockIdx.x) * g.c + c] = sums[0];
}

// NHWC: the tiles of the forward; dy's part of the tile is first read in the (c, h, w) order (4 consecutive
// positions of a channel per thread) and masked into shared memory, then each thread routes it to its
// channel's window arg-maxes, writes dz channel-fastest and keeps its channel's sum; the block's lanes of each
// channel meet in a fixed tree and the block writes one partial row.
template <typename T, typename I, bool Drop>
__global__ void __launch_bounds__(kThreads)
    pool_dropout_backward_nhwc_kernel(const T* __restrict__ z, const float* __restrict__ bias,
                                      const T* __restrict__ dy, T* __restrict__ dz, float* __restrict__ partials,
                                      Geometry<I> g, DropoutMask d, I tiles, I tiles_per_sample) {
  __shared__ float grad[kTile + kThreads];  // [c][tile_positions + 1]: dy as a positive, kept maximum gets it
  __shared__ float sums[kThreads];
  const uint64_t step = Drop ? mask_step(d) : 0;
  const int row = g.tile_positions + 1;
  const I c = static_cast<I>(threadIdx.x) & (g.c - 1);
  const int first = static_cast<int>(threadIdx.x >> g.c_shift) * kGroup;
  // The staging's mapping: tile_positions / 4 groups per channel, kThreads groups per tile.
  const int groups_shift = g.tile_positions_shift - 2;
  const I staged_c = static_cast<I>(threadIdx.x) >> groups_shift;
  const int staged_first = static_cast<int>(threadIdx.x & ((1u << groups_shift) - 1)) * kGroup;
  const float b = bias[c];
  float acc = 0.0f;
  for (I tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const TilePlace<I> place = tile_place(g, tile, tiles_per_sample);
    const I staged_pos = place.pos0 + staged_first, flat = flat_index(g, place.n, staged_c, staged_pos);
    const uint32_t keep = run_keep_bits<Drop>(d, step, g, place.n, staged_c, staged_pos);
#pragma unroll
    for (int j = 0; j < kGroup && staged_pos + j < g.phw; ++j)
      grad[staged_c * row + staged_first + j] =
          ((keep >> j) & 1u) ? pooled_gradient<T, Drop>(to_float(dy[flat + j]), d) : 0.0f;
    __syncthreads();
    const I pos = place.pos0 + first;
#pragma unroll
    for (int j = 0; j < kGroup && pos + j < g.phw; ++j) {
      I at[4];
      float v[4];
      load_window<T, I, true>(z, b, g, place.n, c, pos + j, at, v);
      const int best = arg_max(v);
      const float gv = v[best] > 0.0f ? grad[c * row + first + j] : 0.0f;
      store_window_gradient(dz, at, best, gv);
      acc += gv;
    }
    __syncthreads();
  }
  sum_channel_lanes(sums, acc, static_cast<int>(g.c));
  if (threadIdx.x < g.c) partials[static_cast<int64_t>(blockIdx.x) * g.c + threadIdx.x] = sums[threadIdx.x];
}

int64_t pooled_positions(const PoolDropoutShape& s) { return (s.h / 2) * (s.w / 2); }

// NHWC: tiles of kTile / c positions of one sample.
int64_t tiles_per_sample(const PoolDropoutShape& s) {
  const int64_t positions = kTile / s.c;
  return (pooled_positions(s) + positions - 1) / positions;
}

// Blocks for `items` units of a reduction: at most kMaxPartialSumRows, each taking the same number of units.
int64_t balanced_rows(int64_t items) {
  const int64_t per_block = (items + kMaxPartialSumRows - 1) / kMaxPartialSumRows;
  const int64_t rows = per_block < 1 ? 1 : (items + per_block - 1) / per_block;
  return rows < 1 ? 1 : rows;
}

int64_t partial_rows(const PoolDropoutShape& s, Layout layout) {
  if (layout == Layout::NHWC) return balanced_rows(s.n * tiles_per_sample(s));
  return balanced_rows((s.n * pooled_positions(s) + kGroup * kThreads - 1) / (kGroup * kThreads));
}

void check_shape(const PoolDropoutShape& s, const char* what) {
  if (!pool_dropout_supports(s.c))
    fatal(std::string(what) + ": " + std::to_string(s.c) + " channels (needs a power of two up to 256)");
  if (s.n <= 0 || s.h < 2 || s.w < 2) fatal(std::string(what) + ": the input is smaller than one 2x2 window");
}

DropoutMask device_mask(const PoolDropoutMask& m, const char* what) {
  return make_dropout_mask(m.p, m.key, m.step, m.step_device, m.first_element, what);
}

// Calls f(TypeTag<T>, TypeTag<I>, std::bool_constant<Drop>) for the dtype, the index type z's size allows and
// whether the mask drops anything.
template <typename F>
void dispatch_pass(const PoolDropoutShape& s, DType dtype, bool drop, F&& f) {
  dispatch_dtype(dtype, [&](auto type) {
    dispatch_index(s.n * s.c * s.h * s.w, [&](auto index) {
      if (drop) f(type, index, std::true_type{});
      else f(type, index, std::false_type{});
    });
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace

bool pool_dropout_supports(int64_t c) { return c >= 1 && c <= kThreads && (c & (c - 1)) == 0; }

int64_t pool_dropout_backward_workspace(const PoolDropoutShape& s) {
  const int64_t nhwc = partial_rows(s, Layout::NHWC), nchw = partial_rows(s, Layout::NCHW);
  return (nhwc > nchw ? nhwc : nchw) * s.c;
}

void bias_relu_pool_dropout_forward(const void* z, const float* bias, void* y, const PoolDropoutShape& s,
                                    const PoolDropoutMask& mask, Layout layout, DType dtype, cudaStream_t stream) {
  check_shape(s, "bias_relu_pool_dropout_forward");
  const DropoutMask d = device_mask(mask, "bias_relu_pool_dropout_forward");
  const int64_t total = s.n * s.c * pooled_positions(s), tiles = s.n * tiles_per_sample(s);
  dispatch_pass(s, dtype, mask.p > 0.0, [&](auto type, auto index, auto drop) {
    using T = typename decltype(type)::type;
    using I = typename decltype(index)::type;
    const auto zt = static_cast<const T*>(z);
    const auto yt = static_cast<T*>(y);
    if (layout == Layout::NHWC)
      pool_dropout_forward_nhwc_kernel<T, I, drop()><<<grid_for(tiles * kThreads), kThreads, 0, stream>>>(
          zt, bias, yt, geometry_of<I>(s), d, static_cast<I>(tiles), static_cast<I>(tiles_per_sample(s)));
    else
      pool_dropout_forward_nchw_kernel<T, I, drop()><<<grid_for((total + kGroup - 1) / kGroup), kThreads, 0, stream>>>(
          zt, bias, yt, geometry_of<I>(s), d, static_cast<I>(total));
  });
}

void bias_relu_pool_dropout_backward(const void* z, const float* bias, const void* dy, void* dz, float* dbias,
                                     float* workspace, const PoolDropoutShape& s, const PoolDropoutMask& mask,
                                     Layout layout, DType dtype, cudaStream_t stream) {
  check_shape(s, "bias_relu_pool_dropout_backward");
  const DropoutMask d = device_mask(mask, "bias_relu_pool_dropout_backward");
  // Rows and columns past an even size are outside every window: their gradient is zero.
  if (s.h % 2 != 0 || s.w % 2 != 0)
    CHECK_CUDA(cudaMemsetAsync(dz, 0, static_cast<size_t>(s.n * s.c * s.h * s.w) * dtype_size(dtype), stream));
  const int64_t rows = partial_rows(s, layout);
  dispatch_pass(s, dtype, mask.p > 0.0, [&](auto type, auto index, auto drop) {
    using T = typename decltype(type)::type;
    using I = typename decltype(index)::type;
    const auto zt = static_cast<const T*>(z);
    const auto dyt = static_cast<const T*>(dy);
    const auto dzt = static_cast<T*>(dz);
    if (layout == Layout::NHWC)
      pool_dropout_backward_nhwc_kernel<T, I, drop()><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(
          zt, bias, dyt, dzt, workspace, geometry_of<I>(s), d, static_cast<I>(s.n * tiles_per_sample(s)),
          static_cast<I>(tiles_per_sample(s)));
    else
      pool_dropout_backward_nchw_kernel<T, I, drop()>
          <<<dim3(static_cast<unsigned int>(rows), static_cast<unsigned int>(s.c)), kThreads, 0, stream>>>(
              zt, bias, dyt, dzt, workspace, geometry_of<I>(s), d);
  });
  sum_partial_rows(workspace, rows, s.c, dbias, stream);
}

}  // namespace sb::kernels
