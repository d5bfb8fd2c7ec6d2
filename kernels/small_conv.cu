#include <algorithm>
#include <string>
#include <type_traits>

#include "kernels/device_utils.cuh"
#include "kernels/index_type.cuh"
#include "kernels/partial_sums.h"
#include "kernels/small_conv.h"

namespace sb::kernels {
namespace {
using namespace detail;

// A thread's sums for its channel: the 9 x C weight taps, in the order (r * 3 + s) * C + c, and the bias.
constexpr int sums_per_channel(int64_t c) { return kFirstConvTaps * static_cast<int>(c) + 1; }
template <int C>
constexpr int kTapsOf = kFirstConvTaps * C;
template <int C>
constexpr int kSumsOf = sums_per_channel(C);

// The lanes kernel's blocks: 512 threads for one input channel, so that the 256 partial rows hold enough
// lanes to fill the GPU; 256 for more, whose larger trees must fit the 48 KiB of static shared memory.
constexpr int lane_threads_log2(int64_t c) { return c == 1 ? 9 : 8; }
int lane_threads(int64_t c) { return 1 << lane_threads_log2(c); }
template <int C>
constexpr int kLaneThreadsLog2Of = lane_threads_log2(C);
template <int C>
constexpr int kLaneThreadsOf = 1 << kLaneThreadsLog2Of<C>;
constexpr int kLanePositions = 4;  // fewest positions per lane before a launch takes fewer blocks
constexpr int kUnroll = 2;         // positions whose y and dy loads a lane has in flight at once

// The shape in the kernels' index type I and the pass's options; k is a power of two, so channel
// arithmetic is shifts and masks.
template <typename I>
struct Geometry {
  I h, w, p, q, pq;
  int k, k_shift, pad, stride;
  bool bias, relu, krsc;
};

template <typename I>
Geometry<I> geometry_of(const FirstConvShape& s, const FirstConvOptions& o) {
  return Geometry<I>{static_cast<I>(s.h), static_cast<I>(s.w), static_cast<I>(s.p), static_cast<I>(s.q),
                     static_cast<I>(s.p * s.q), static_cast<int>(s.k), log2_of_power_of_two(s.k), s.pad, s.stride,
                     o.bias, o.relu, o.filters_krsc};
}

// Where tap j = (r * 3 + s) * C + c of one filter lies in memory: j itself in [k, 3, 3, c] order.
template <int C>
__device__ __forceinline__ int tap_offset(int j, bool krsc) {
  return krsc ? j : (j % C) * kFirstConvTaps + j / C;
}

// The 9 x C input values under output pixel (p, q) of sample n, zero outside the image.
template <int C, bool kNhwc, typename T, typename I>
__device__ __forceinline__ void load_window(const T* x, I n, I p, I q, const Geometry<I>& g, float (&v)[kTapsOf<C>]) {
  const I h0 = p * g.stride - g.pad, w0 = q * g.stride - g.pad;
  const T* img = x + n * C * g.h * g.w;
#pragma unroll
  for (int r = 0; r < 3; ++r)
#pragma unroll
    for (int s = 0; s < 3; ++s) {
      const I h = h0 + r, w = w0 + s;
      const bool inside = h >= 0 && h < g.h && w >= 0 && w < g.w;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const I at = kNhwc ? (h * g.w + w) * C + c : (c * g.h + h) * g.w + w;
        v[(r * 3 + s) * C + c] = inside ? to_float(img[at]) : 0.0f;
      }
    }
}

template <int C, typename T>
__device__ __forceinline__ void load_filter(const T* w, int k, bool krsc, float (&wk)[kTapsOf<C>]) {
  const T* filter = w + k * kTapsOf<C>;
#pragma unroll
  for (int j = 0; j < kTapsOf<C>; ++j) wk[j] = to_float(filter[tap_offset<C>(j, krsc)]);
}

// [relu](conv [+ b]): the convolution rounded to T, and with a bias the sum rounded again.
template <typename T, int C, typename I>
__device__ __forceinline__ T conv_epilogue(const float (&v)[kTapsOf<C>], const float (&wk)[kTapsOf<C>], float b,
                                           const Geometry<I>& g) {
  float acc = 0.0f;
#pragma unroll
  for (int t = 0; t < kTapsOf<C>; ++t) acc = fmaf(v[t], wk[t], acc);
  float z = to_float(from_float<T>(acc));
  if (g.bias) z = to_float(from_float<T>(z + b));
  return from_float<T>(g.relu && !(z > 0.0f) ? 0.0f : z);
}

// NHWC: thread t keeps channel t % k (its filter in registers) and the block's lanes walk the pixels, so a
// warp stores consecutive channels.
template <typename T, typename I, int C>
__global__ void __launch_bounds__(kThreads)
    first_conv_forward_nhwc_kernel(const T* __restrict__ x, const T* __restrict__ w, const float* __restrict__ bias,
                                   T* __restrict__ y, Geometry<I> g, I pixels) {
  const int k = static_cast<int>(threadIdx.x) & (g.k - 1);
  const I lanes = kThreads >> g.k_shift, lane = static_cast<I>(threadIdx.x) >> g.k_shift;
  float wk[kTapsOf<C>];
  load_filter<C>(w, k, g.krsc, wk);
  const float b = g.bias ? bias[k] : 0.0f;
  for (I pix = static_cast<I>(blockIdx.x) * lanes + lane; pix < pixels; pix += static_cast<I>(gridDim.x) * lanes) {
    const I n = pix / g.pq, pq = pix - n * g.pq, p = pq / g.q, q = pq - p * g.q;
    float v[kTapsOf<C>];
    load_window<C, true>(x, n, p, q, g, v);
    y[pix * g.k + k] = conv_epilogue<T, C>(v, wk, b, g);
  }
}

// NCHW: one thread per output element in storage order (a warp stores consecutive pixels of one channel).
template <typename T, typename I, int C>
__global__ void __launch_bounds__(kThreads)
    first_conv_forward_nchw_kernel(const T* __restrict__ x, const T* __restrict__ w, const float* __restrict__ bias,
                                   T* __restrict__ y, Geometry<I> g, I total) {
  const I stride = static_cast<I>(gridDim.x) * kThreads;
  for (I i = static_cast<I>(blockIdx.x) * kThreads + threadIdx.x; i < total; i += stride) {
    const I plane = i / g.pq, pq = i - plane * g.pq, p = pq / g.q, q = pq - p * g.q;
    const int k = static_cast<int>(plane & (g.k - 1));
    const I n = plane >> g.k_shift;
    float wk[kTapsOf<C>], v[kTapsOf<C>];
    load_filter<C>(w, k, g.krsc, wk);
    load_window<C, false>(x, n, p, q, g, v);
    y[i] = conv_epilogue<T, C>(v, wk, g.bias ? bias[k] : 0.0f, g);
  }
}

// The width of a row of partial sums: every channel's taps, then every channel's bias.
int64_t row_width(const FirstConvShape& s, const FirstConvOptions& o) {
  return s.k * (kFirstConvTaps * s.c + (o.bias ? 1 : 0));
}

// The end of both backward kernels: the block's lanes of each channel meet in a fixed tree in shared memory
// (the same order every run), then lane 0 of each channel writes its part of the block's row of partial
// sums, [channels x taps weights in the filter's order, channels biases]. sums: [kSums][kThreadsInBlock]
// floats of shared memory; lane_stride: the threads between two lanes of one channel. Every thread of the
// block calls it.
template <int kThreadsInBlock, int C, typename I>
__device__ __forceinline__ void write_block_partials(const float (&acc)[kSumsOf<C>], float* sums, int t, int k,
                                                     int lane, int lanes, int lane_stride, const Geometry<I>& g,
                                                     float* partials) {
  constexpr int kSums = kSumsOf<C>, kTaps = kTapsOf<C>;
#pragma unroll
  for (int j = 0; j < kSums; ++j) sums[j * kThreadsInBlock + t] = acc[j];
  __syncthreads();
  for (int half = lanes >> 1; half > 0; half >>= 1) {
    if (lane < half)
#pragma unroll
      for (int j = 0; j < kSums; ++j) sums[j * kThreadsInBlock + t] += sums[j * kThreadsInBlock + t + half * lane_stride];
    __syncthreads();
  }
  if (lane != 0) return;
  const int width = g.k * (kTaps + (g.bias ? 1 : 0));
  float* row = partials + static_cast<int64_t>(blockIdx.x) * width;
#pragma unroll
  for (int j = 0; j < kTaps; ++j) row[k * kTaps + tap_offset<C>(j, g.krsc)] = sums[j * kThreadsInBlock + t];
  if (g.bias) row[g.k * kTaps + k] = sums[kTaps * kThreadsInBlock + t];
}

// Each thread keeps one channel and walks output positions as one of the block's lanes of that channel:
// NHWC puts the channels fastest across threads (a warp reads 32 consecutive channels of a position), NCHW
// the lanes (a warp reads consecutive positions of a channel). The lanes' sums then meet in a fixed tree in
// shared memory and the block writes one row of partial sums.
template <typename T, typename I, int C, bool kNhwc>
__global__ void __launch_bounds__(kLaneThreadsOf<C>, 2)
    first_conv_backward_kernel(const T* __restrict__ x, const T* __restrict__ y, const T* __restrict__ dy,
                               float* __restrict__ partials, Geometry<I> g, I positions) {
  constexpr int kBlock = kLaneThreadsOf<C>, kSums = kSumsOf<C>;
  __shared__ float sums[kSums * kBlock];
  const int lane_shift = kLaneThreadsLog2Of<C> - g.k_shift;
  const int lanes = 1 << lane_shift, t = static_cast<int>(threadIdx.x);
  const int k = kNhwc ? (t & (g.k - 1)) : (t >> lane_shift);
  const int lane = kNhwc ? (t >> g.k_shift) : (t & (lanes - 1));
  const int lane_stride = kNhwc ? g.k : 1;  // threads between two lanes of one channel
  const I stride = static_cast<I>(gridDim.x) * lanes;
  float acc[kSums] = {};
  for (I first = static_cast<I>(blockIdx.x) * lanes + lane; first < positions; first += kUnroll * stride) {
    // The loads of kUnroll positions first, then their sums: the loads are in flight together.
    float keep[kUnroll], gv[kUnroll];
    I n[kUnroll], pq[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const I pos = first + u * stride;
      keep[u] = 0.0f;
      gv[u] = 0.0f;
      n[u] = pos / g.pq;
      pq[u] = pos - n[u] * g.pq;
      if (pos < positions) {
        const I at = kNhwc ? pos * g.k + k : (n[u] * g.k + k) * g.pq + pq[u];
        keep[u] = g.relu ? to_float(y[at]) : 1.0f;
        gv[u] = to_float(dy[at]);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (!(keep[u] > 0.0f)) continue;  // the ReLU's mask, and positions past the end
      const I p = pq[u] / g.q, q = pq[u] - p * g.q;
      float v[kTapsOf<C>];
      load_window<C, kNhwc>(x, n[u], p, q, g, v);
#pragma unroll
      for (int j = 0; j < kTapsOf<C>; ++j) acc[j] = fmaf(gv[u], v[j], acc[j]);
      acc[kTapsOf<C>] += gv[u];
    }
  }
  write_block_partials<kBlock, C>(acc, sums, t, k, lane, lanes, lane_stride, g, partials);
}

// NHWC backward by tiles: a tile is kTileRows output rows of one sample. The block stages the input rows
// under the tile in shared memory, then each thread (one channel; the block's lanes share the tile's
// positions) issues the loads of y and dy for kPerLane positions before it sums any of them, so many loads
// are in flight (a warp reads the channels of one position in a coalesced run when k >= 32). The blocks walk
// the tiles grid-stride, each thread keeping its channel's sums in registers; one tree per block at the
// end writes the block's row of partial sums.
constexpr int kTileThreads = 256;
constexpr int kTileRows = 2;
constexpr int kPerLane = 8;                            // positions whose loads a lane issues together
constexpr int64_t kTileSharedFloats = 48 * 1024 / 4;  // the input rows and the tree, without an opt-in

int tile_input_rows(const FirstConvShape& s) { return (kTileRows - 1) * s.stride + 3; }
int64_t tile_input_floats(const FirstConvShape& s) { return tile_input_rows(s) * s.w * s.c; }
int64_t tile_tree_floats(const FirstConvShape& s) { return int64_t{sums_per_channel(s.c)} * kTileThreads; }
// Wider images take the lanes kernel.
bool takes_tiles(const FirstConvShape& s, Layout layout) {
  return layout == Layout::NHWC && tile_input_floats(s) + tile_tree_floats(s) <= kTileSharedFloats;
}
int64_t tile_count(const FirstConvShape& s) { return s.n * ((s.p + kTileRows - 1) / kTileRows); }

// The tiles kernel's view of its shared memory: the input rows under the current tile, [in_rows][w][C].
struct TileRows {
  float* xs;
  int in_rows, in_width, row_floats;
};

// The input rows h0 .. h0 + in_rows - 1 of sample n (those under the tile) into shared memory, zero above
// and below the image; the block's threads share the copy. The caller brackets it with barriers.
template <typename T, typename I>
__device__ __forceinline__ void stage_tile_rows(const T* x, I n, I h0, const Geometry<I>& g, const TileRows& rows,
                                                int t) {
  for (int e = t; e < rows.in_rows * rows.row_floats; e += kTileThreads) {
    const int r = e / rows.row_floats, rest = e - r * rows.row_floats;
    const I h = h0 + r;
    rows.xs[e] = (h >= 0 && h < g.h) ? to_float(x[(n * g.h + h) * rows.row_floats + rest]) : 0.0f;
  }
}

// dy at the lane's kPerLane positions of the tile from `base`, masked by the ReLU (y > 0) and 0 past the
// tile: all the loads of y and dy are issued before any sum uses them, so that many are in flight.
template <typename T, typename I>
__device__ __forceinline__ void load_masked_gradients(const T* y, const T* dy, I first, int base, int lanes,
                                                      int positions, int k, const Geometry<I>& g,
                                                      float (&gz)[kPerLane]) {
#pragma unroll
  for (int u = 0; u < kPerLane; ++u) {
    const int local = base + u * lanes;
    float keep = 0.0f, gv = 0.0f;
    if (local < positions) {
      const I at = (first + local) * g.k + k;
      keep = g.relu ? to_float(y[at]) : 1.0f;
      gv = to_float(dy[at]);
    }
    gz[u] = keep > 0.0f ? gv : 0.0f;  // the ReLU's mask; 0 past the tile
  }
}

// One position's share of the sums: gz times the 3 x 3 x C window under it, read from the staged rows (zero
// left and right of the image), and gz itself for the bias.
template <int C, typename I>
__device__ __forceinline__ void accumulate_position(float gz, int local, const TileRows& rows, const Geometry<I>& g,
                                                    float (&acc)[kSumsOf<C>]) {
  const int pr = local / static_cast<int>(g.q), q = local - pr * static_cast<int>(g.q);
  const int row0 = pr * g.stride, col0 = q * g.stride - g.pad;
#pragma unroll
  for (int r = 0; r < 3; ++r)
#pragma unroll
    for (int s = 0; s < 3; ++s) {
      const int col = col0 + s;
      const bool inside = col >= 0 && col < rows.in_width;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const float v = inside ? rows.xs[(row0 + r) * rows.row_floats + col * C + c] : 0.0f;
        acc[(r * 3 + s) * C + c] = fmaf(gz, v, acc[(r * 3 + s) * C + c]);
      }
    }
  acc[kTapsOf<C>] += gz;
}

template <typename T, typename I, int C>
__global__ void __launch_bounds__(kTileThreads)
    first_conv_backward_tiles_kernel(const T* __restrict__ x, const T* __restrict__ y, const T* __restrict__ dy,
                                     float* __restrict__ partials, Geometry<I> g, I tiles) {
  extern __shared__ float shared[];
  const int in_rows = (kTileRows - 1) * g.stride + 3;
  const int in_width = static_cast<int>(g.w);
  const int row_floats = in_width * C;
  const TileRows rows{shared, in_rows, in_width, row_floats};  // xs: the input rows under the current tile
  float* sums = shared + in_rows * row_floats;                // [kSums][kTileThreads]: the block's tree at the end
  const int t = static_cast<int>(threadIdx.x);
  const int k = t & (g.k - 1), lane = t >> g.k_shift, lanes = kTileThreads >> g.k_shift;
  const I bands = (g.p + kTileRows - 1) / kTileRows;
  float acc[kSumsOf<C>] = {};
  for (I tile = static_cast<I>(blockIdx.x); tile < tiles; tile += static_cast<I>(gridDim.x)) {
    const I n = tile / bands, p0 = (tile - n * bands) * kTileRows;
    const I h0 = p0 * g.stride - g.pad;
    __syncthreads();  // every thread is done with the previous tile's rows
    stage_tile_rows(x, n, h0, g, rows, t);
    __syncthreads();
    const I rows_here = g.p - p0 < kTileRows ? g.p - p0 : static_cast<I>(kTileRows);
    const int positions = static_cast<int>(rows_here * g.q);
    const I first = (n * g.p + p0) * g.q;  // the tile's first position
    for (int base = lane; base < positions; base += lanes * kPerLane) {
      float gz[kPerLane];
      load_masked_gradients(y, dy, first, base, lanes, positions, k, g, gz);
#pragma unroll
      for (int u = 0; u < kPerLane; ++u) {
        const int local = base + u * lanes;
        if (local >= positions) break;
        accumulate_position<C>(gz[u], local, rows, g, acc);
      }
    }
  }
  // Lane l of channel k is thread l * g.k + k.
  write_block_partials<kTileThreads, C>(acc, sums, t, k, lane, lanes, g.k, g, partials);
}

int64_t partial_rows(const FirstConvShape& s) {
  const int64_t lanes = lane_threads(s.c) / s.k, positions = s.n * s.p * s.q;
  const int64_t wanted = (positions + lanes * kLanePositions - 1) / (lanes * kLanePositions);
  return wanted < 1 ? 1 : (wanted < kMaxPartialSumRows ? wanted : kMaxPartialSumRows);
}

void check_shape(const FirstConvShape& s, const char* what) {
  if (!first_conv_supports(s.c, s.k))
    fatal(std::string(what) + ": " + std::to_string(s.c) + " input and " + std::to_string(s.k) +
          " output channels (needs 1 to " + std::to_string(kFirstConvMaxChannels) +
          " inputs and a power of two up to 256 outputs)");
  if (s.n <= 0 || s.h <= 0 || s.w <= 0 || s.p <= 0 || s.q <= 0 || s.stride <= 0 || s.pad < 0)
    fatal(std::string(what) + ": empty or invalid shape");
}

// The most elements any offset of the launch reaches: the output, or the input when it is larger.
int64_t largest_tensor(const FirstConvShape& s) {
  const int64_t out = s.n * s.k * s.p * s.q, in = s.n * s.c * s.h * s.w;
  return out > in ? out : in;
}

// f(std::integral_constant<int, C>) for the shape's input channels (checked by check_shape).
template <typename F>
void dispatch_channels(int64_t c, F&& f) {
  switch (c) {
    case 1: f(std::integral_constant<int, 1>{}); return;
    case 2: f(std::integral_constant<int, 2>{}); return;
    case 3: f(std::integral_constant<int, 3>{}); return;
    case 4: f(std::integral_constant<int, 4>{}); return;
  }
  fatal("first convolution: " + std::to_string(c) + " input channels");
}

// f(dtype tag, index tag, channels) for the launch's element type, index type and input channels.
template <typename F>
void dispatch_first_conv(DType dtype, const FirstConvShape& s, F&& f) {
  dispatch_dtype(dtype, [&](auto tag) {
    dispatch_index(largest_tensor(s), [&](auto index) {
      dispatch_channels(s.c, [&](auto channels) { f(tag, index, channels); });
    });
  });
}

}  // namespace

bool first_conv_supports(int64_t c, int64_t k) {
  return c >= 1 && c <= kFirstConvMaxChannels && k >= 1 && k <= kThreads && (k & (k - 1)) == 0;
}

int64_t first_conv_gradient_count(const FirstConvShape& s, const FirstConvOptions& o) { return row_width(s, o); }

int64_t first_conv_backward_workspace(const FirstConvShape& s, const FirstConvOptions& o) {
  // Either kernel's rows: the tiles' when an NHWC launch takes them, the lanes' otherwise.
  const int64_t tile_rows = std::min<int64_t>(tile_count(s), kMaxPartialSumRows);
  return std::max(partial_rows(s), tile_rows) * row_width(s, o);
}

void first_conv_forward(const void* x, const void* w, const float* bias, void* y, const FirstConvShape& s,
                        const FirstConvOptions& o, Layout layout, DType dtype, cudaStream_t stream) {
  check_shape(s, "first_conv_forward");
  if (o.bias && !bias) fatal("first_conv_forward: a bias is asked for but none is given");
  const int64_t total = s.n * s.k * s.p * s.q;
  dispatch_first_conv(dtype, s, [&](auto tag, auto index, auto channels) {
    using T = typename decltype(tag)::type;
    using I = typename decltype(index)::type;
    constexpr int C = decltype(channels)::value;
    const auto xt = static_cast<const T*>(x);
    const auto wt = static_cast<const T*>(w);
    const auto yt = static_cast<T*>(y);
    if (layout == Layout::NHWC)
      first_conv_forward_nhwc_kernel<T, I, C><<<grid_for(total), kThreads, 0, stream>>>(
          xt, wt, bias, yt, geometry_of<I>(s, o), static_cast<I>(s.n * s.p * s.q));
    else
      first_conv_forward_nchw_kernel<T, I, C><<<grid_for(total), kThreads, 0, stream>>>(
          xt, wt, bias, yt, geometry_of<I>(s, o), static_cast<I>(total));
  });
  CHECK_CUDA_LAUNCH();
}

void first_conv_backward(const void* x, const void* y, const void* dy, float* grads, float* workspace,
                         const FirstConvShape& s, const FirstConvOptions& o, Layout layout, DType dtype,
                         cudaStream_t stream) {
  check_shape(s, "first_conv_backward");
  if (o.relu && !y) fatal("first_conv_backward: the ReLU's mask needs the forward's output");
  const bool tiles = takes_tiles(s, layout);
  const int64_t rows = tiles ? std::min<int64_t>(tile_count(s), kMaxPartialSumRows) : partial_rows(s);
  dispatch_first_conv(dtype, s, [&](auto tag, auto index, auto channels) {
    using T = typename decltype(tag)::type;
    using I = typename decltype(index)::type;
    constexpr int C = decltype(channels)::value;
    const auto xt = static_cast<const T*>(x);
    const auto yt = static_cast<const T*>(y);
    const auto dyt = static_cast<const T*>(dy);
    const auto positions = static_cast<I>(s.n * s.p * s.q);
    const auto blocks = static_cast<unsigned int>(rows);
    const Geometry<I> g = geometry_of<I>(s, o);
    if (tiles) {
      const size_t shared = static_cast<size_t>(tile_input_floats(s) + tile_tree_floats(s)) * sizeof(float);
      first_conv_backward_tiles_kernel<T, I, C><<<blocks, kTileThreads, shared, stream>>>(
          xt, yt, dyt, workspace, g, static_cast<I>(tile_count(s)));
    } else if (layout == Layout::NHWC) {
      first_conv_backward_kernel<T, I, C, true><<<blocks, kLaneThreadsOf<C>, 0, stream>>>(xt, yt, dyt, workspace, g,
                                                                                         positions);
    } else {
      first_conv_backward_kernel<T, I, C, false><<<blocks, kLaneThreadsOf<C>, 0, stream>>>(xt, yt, dyt, workspace,
                                                                                          g, positions);
    }
  });
  CHECK_CUDA_LAUNCH();
  sum_partial_rows(workspace, rows, row_width(s, o), grads, stream);
}

}  // namespace sb::kernels
