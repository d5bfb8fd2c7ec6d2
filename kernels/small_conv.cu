#include <algorithm>

#include "kernels/device_utils.cuh"
#include "kernels/index_type.cuh"
#include "kernels/partial_sums.h"
#include "kernels/small_conv.h"

namespace sb::kernels {
namespace {
using namespace detail;

constexpr int kSums = kFirstConvTaps + 1;  // the 9 taps' weight gradients and the bias gradient

// The backward's blocks: 512 threads, so that the 256 partial rows hold enough lanes to fill the GPU.
constexpr int kBackwardThreads = 512;
constexpr int kBackwardThreadsLog2 = 9;
constexpr int kLanePositions = 4;  // fewest positions per lane before a launch takes fewer blocks
constexpr int kUnroll = 2;         // positions whose y and dy loads a lane has in flight at once

// The shape in the kernels' index type I; k is a power of two, so channel arithmetic is shifts and masks.
template <typename I>
struct Geometry {
  I h, w, p, q, pq;
  int k, k_shift, pad, stride;
};

template <typename I>
Geometry<I> geometry_of(const FirstConvShape& s) {
  return Geometry<I>{static_cast<I>(s.h), static_cast<I>(s.w), static_cast<I>(s.p), static_cast<I>(s.q),
                     static_cast<I>(s.p * s.q), static_cast<int>(s.k), log2_of_power_of_two(s.k), s.pad, s.stride};
}

// The 9 input values under output pixel (p, q) of sample n, zero outside the image.
template <typename T, typename I>
__device__ __forceinline__ void load_window(const T* x, I n, I p, I q, const Geometry<I>& g, float v[kFirstConvTaps]) {
  const I h0 = p * g.stride - g.pad, w0 = q * g.stride - g.pad;
  const T* img = x + n * g.h * g.w;
#pragma unroll
  for (int r = 0; r < 3; ++r)
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      const I h = h0 + r, w = w0 + c;
      v[r * 3 + c] = (h >= 0 && h < g.h && w >= 0 && w < g.w) ? to_float(img[h * g.w + w]) : 0.0f;
    }
}

template <typename T>
__device__ __forceinline__ void load_filter(const T* w, int k, float wk[kFirstConvTaps]) {
#pragma unroll
  for (int t = 0; t < kFirstConvTaps; ++t) wk[t] = to_float(w[k * kFirstConvTaps + t]);
}

// relu(conv + bias), the convolution rounded to T before the bias is added and the sum rounded again.
template <typename T>
__device__ __forceinline__ T conv_bias_relu(const float v[kFirstConvTaps], const float wk[kFirstConvTaps], float b) {
  float acc = 0.0f;
#pragma unroll
  for (int t = 0; t < kFirstConvTaps; ++t) acc = fmaf(v[t], wk[t], acc);
  const float z = to_float(from_float<T>(to_float(from_float<T>(acc)) + b));
  return from_float<T>(z > 0.0f ? z : 0.0f);
}

// NHWC: thread t keeps channel t % k (its filter in registers) and the block's lanes walk the pixels, so a
// warp stores consecutive channels.
template <typename T, typename I>
__global__ void __launch_bounds__(kThreads)
    first_conv_forward_nhwc_kernel(const T* __restrict__ x, const T* __restrict__ w, const float* __restrict__ bias,
                                   T* __restrict__ y, Geometry<I> g, I pixels) {
  const int k = static_cast<int>(threadIdx.x) & (g.k - 1);
  const I lanes = kThreads >> g.k_shift, lane = static_cast<I>(threadIdx.x) >> g.k_shift;
  float wk[kFirstConvTaps];
  load_filter(w, k, wk);
  const float b = bias[k];
  for (I pix = static_cast<I>(blockIdx.x) * lanes + lane; pix < pixels; pix += static_cast<I>(gridDim.x) * lanes) {
    const I n = pix / g.pq, pq = pix - n * g.pq, p = pq / g.q, q = pq - p * g.q;
    float v[kFirstConvTaps];
    load_window(x, n, p, q, g, v);
    y[pix * g.k + k] = conv_bias_relu<T>(v, wk, b);
  }
}

// NCHW: one thread per output element in storage order (a warp stores consecutive pixels of one channel).
template <typename T, typename I>
__global__ void __launch_bounds__(kThreads)
    first_conv_forward_nchw_kernel(const T* __restrict__ x, const T* __restrict__ w, const float* __restrict__ bias,
                                   T* __restrict__ y, Geometry<I> g, I total) {
  const I stride = static_cast<I>(gridDim.x) * kThreads;
  for (I i = static_cast<I>(blockIdx.x) * kThreads + threadIdx.x; i < total; i += stride) {
    const I plane = i / g.pq, pq = i - plane * g.pq, p = pq / g.q, q = pq - p * g.q;
    const int k = static_cast<int>(plane & (g.k - 1));
    const I n = plane >> g.k_shift;
    float wk[kFirstConvTaps], v[kFirstConvTaps];
    load_filter(w, k, wk);
    load_window(x, n, p, q, g, v);
    y[i] = conv_bias_relu<T>(v, wk, bias[k]);
  }
}

// The end of both backward kernels: the block's lanes of each channel meet in a fixed tree in shared memory
// (the same order every run), then lane 0 of each channel writes its part of the block's row of partial
// sums, [channels * 9 weight taps, channels biases]. sums: [kSums][kThreadsInBlock] floats of shared memory;
// lane_stride: the threads between two lanes of one channel. Every thread of the block calls it.
template <int kThreadsInBlock>
__device__ __forceinline__ void write_block_partials(const float (&acc)[kSums], float* sums, int t, int k, int lane,
                                                     int lanes, int lane_stride, int channels, float* partials) {
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
  float* row = partials + static_cast<int64_t>(blockIdx.x) * channels * kSums;
#pragma unroll
  for (int j = 0; j < kFirstConvTaps; ++j) row[k * kFirstConvTaps + j] = sums[j * kThreadsInBlock + t];
  row[channels * kFirstConvTaps + k] = sums[kFirstConvTaps * kThreadsInBlock + t];
}

// Each thread keeps one channel and walks output positions as one of the block's lanes of that channel:
// NHWC puts the channels fastest across threads (a warp reads 32 consecutive channels of a position), NCHW
// the lanes (a warp reads consecutive positions of a channel). The lanes' sums then meet in a fixed tree in
// shared memory and the block writes one row of partial sums: [k * 9 weight taps, k biases].
template <typename T, typename I, bool kNhwc>
__global__ void __launch_bounds__(kBackwardThreads, 2)
    first_conv_backward_kernel(const T* __restrict__ x, const T* __restrict__ y, const T* __restrict__ dy,
                               float* __restrict__ partials, Geometry<I> g, I positions) {
  __shared__ float sums[kSums][kBackwardThreads];
  const int lane_shift = kBackwardThreadsLog2 - g.k_shift;
  const int lanes = 1 << lane_shift, t = static_cast<int>(threadIdx.x);
  const int k = kNhwc ? (t & (g.k - 1)) : (t >> lane_shift);
  const int lane = kNhwc ? (t >> g.k_shift) : (t & (lanes - 1));
  const int lane_stride = kNhwc ? g.k : 1;  // threads between two lanes of one channel
  const I stride = static_cast<I>(gridDim.x) * lanes;
  float acc[kSums] = {};
  for (I first = static_cast<I>(blockIdx.x) * lanes + lane; first < positions; first += kUnroll * stride) {
    // The loads of kUnroll positions first, then their sums: the loads are in flight together.
    float yv[kUnroll], gv[kUnroll];
    I n[kUnroll], pq[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const I pos = first + u * stride;
      yv[u] = 0.0f;
      gv[u] = 0.0f;
      n[u] = pos / g.pq;
      pq[u] = pos - n[u] * g.pq;
      if (pos < positions) {
        const I at = kNhwc ? pos * g.k + k : (n[u] * g.k + k) * g.pq + pq[u];
        yv[u] = to_float(y[at]);
        gv[u] = to_float(dy[at]);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (!(yv[u] > 0.0f)) continue;  // the ReLU's mask (and positions past the end)
      const I p = pq[u] / g.q, q = pq[u] - p * g.q;
      float v[kFirstConvTaps];
      load_window(x, n[u], p, q, g, v);
#pragma unroll
      for (int j = 0; j < kFirstConvTaps; ++j) acc[j] = fmaf(gv[u], v[j], acc[j]);
      acc[kFirstConvTaps] += gv[u];
    }
  }
  write_block_partials<kBackwardThreads>(acc, &sums[0][0], t, k, lane, lanes, lane_stride, g.k, partials);
}

// NHWC backward by tiles: a tile is kTileRows output rows of one sample. The block stages the input rows
// under the tile in shared memory, then each thread (one channel; the block's lanes share the tile's
// positions) issues the loads of y and dy for kPerLane positions before it sums any of them, so many loads
// are in flight (a warp reads the channels of one position in a coalesced run when k >= 32). The blocks walk
// the tiles grid-stride, each thread keeping its channel's 10 sums in registers; one tree per block at the
// end writes the block's row of partial sums.
constexpr int kTileThreads = 256;
constexpr int kTileRows = 2;
constexpr int kPerLane = 8;               // positions whose loads a lane issues together
constexpr int kMaxTileInputFloats = 8192;  // the input rows a tile stages (32 KiB); wider images take the kernel above

int tile_input_rows(const FirstConvShape& s) { return (kTileRows - 1) * s.stride + 3; }
bool takes_tiles(const FirstConvShape& s, Layout layout) {
  return layout == Layout::NHWC && tile_input_rows(s) * s.w <= kMaxTileInputFloats;
}
int64_t tile_count(const FirstConvShape& s) { return s.n * ((s.p + kTileRows - 1) / kTileRows); }

template <typename T, typename I>
__global__ void __launch_bounds__(kTileThreads)
    first_conv_backward_tiles_kernel(const T* __restrict__ x, const T* __restrict__ y, const T* __restrict__ dy,
                                     float* __restrict__ partials, Geometry<I> g, I tiles) {
  extern __shared__ float shared[];
  const int in_rows = (kTileRows - 1) * g.stride + 3;
  const int in_width = static_cast<int>(g.w);
  float* xs = shared;                        // [in_rows][w]: the input rows under the current tile
  float* sums = shared + in_rows * in_width;  // [kSums][kTileThreads]: the block's tree at the end
  const int t = static_cast<int>(threadIdx.x);
  const int k = t & (g.k - 1), lane = t >> g.k_shift, lanes = kTileThreads >> g.k_shift;
  const I bands = (g.p + kTileRows - 1) / kTileRows;
  float acc[kSums] = {};
  for (I tile = static_cast<I>(blockIdx.x); tile < tiles; tile += static_cast<I>(gridDim.x)) {
    const I n = tile / bands, p0 = (tile - n * bands) * kTileRows;
    const I h0 = p0 * g.stride - g.pad;
    __syncthreads();  // every thread is done with the previous tile's rows
    for (int e = t; e < in_rows * in_width; e += kTileThreads) {
      const int r = e / in_width, c = e - r * in_width;
      const I h = h0 + r;
      xs[e] = (h >= 0 && h < g.h) ? to_float(x[(n * g.h + h) * g.w + c]) : 0.0f;
    }
    __syncthreads();
    const I rows_here = g.p - p0 < kTileRows ? g.p - p0 : static_cast<I>(kTileRows);
    const int positions = static_cast<int>(rows_here * g.q);
    const I first = (n * g.p + p0) * g.q;  // the tile's first position
    for (int base = lane; base < positions; base += lanes * kPerLane) {
      float gz[kPerLane];
#pragma unroll
      for (int u = 0; u < kPerLane; ++u) {
        const int local = base + u * lanes;
        float yv = 0.0f, gv = 0.0f;
        if (local < positions) {
          const I at = (first + local) * g.k + k;
          yv = to_float(y[at]);
          gv = to_float(dy[at]);
        }
        gz[u] = yv > 0.0f ? gv : 0.0f;  // the ReLU's mask; 0 past the tile
      }
#pragma unroll
      for (int u = 0; u < kPerLane; ++u) {
        const int local = base + u * lanes;
        if (local >= positions) break;
        const int pr = local / static_cast<int>(g.q), q = local - pr * static_cast<int>(g.q);
        const int row0 = pr * g.stride, col0 = q * g.stride - g.pad;
#pragma unroll
        for (int r = 0; r < 3; ++r)
#pragma unroll
          for (int c = 0; c < 3; ++c) {
            const int col = col0 + c;
            const float v = (col >= 0 && col < in_width) ? xs[(row0 + r) * in_width + col] : 0.0f;
            acc[r * 3 + c] = fmaf(gz[u], v, acc[r * 3 + c]);
          }
        acc[kFirstConvTaps] += gz[u];
      }
    }
  }
  // Lane l of channel k is thread l * g.k + k.
  write_block_partials<kTileThreads>(acc, sums, t, k, lane, lanes, g.k, g.k, partials);
}

int64_t partial_rows(const FirstConvShape& s) {
  const int64_t lanes = kBackwardThreads / s.k, positions = s.n * s.p * s.q;
  const int64_t wanted = (positions + lanes * kLanePositions - 1) / (lanes * kLanePositions);
  return wanted < 1 ? 1 : (wanted < kMaxPartialSumRows ? wanted : kMaxPartialSumRows);
}

void check_shape(const FirstConvShape& s, const char* what) {
  if (!first_conv_supports(s.k))
    fatal(std::string(what) + ": " + std::to_string(s.k) + " output channels (needs a power of two up to 256)");
  if (s.n <= 0 || s.h <= 0 || s.w <= 0 || s.p <= 0 || s.q <= 0 || s.stride <= 0 || s.pad < 0)
    fatal(std::string(what) + ": empty or invalid shape");
}

// The most elements any offset of the launch reaches: the output, or the input when it is larger.
int64_t largest_tensor(const FirstConvShape& s) {
  const int64_t out = s.n * s.k * s.p * s.q, in = s.n * s.h * s.w;
  return out > in ? out : in;
}

}  // namespace

bool first_conv_supports(int64_t k) { return k >= 1 && k <= kThreads && (k & (k - 1)) == 0; }

int64_t first_conv_backward_workspace(const FirstConvShape& s) {
  // Either kernel's rows: the tiles' when an NHWC launch takes them, the lanes' otherwise.
  const int64_t tile_rows = std::min<int64_t>(tile_count(s), kMaxPartialSumRows);
  return std::max(partial_rows(s), tile_rows) * s.k * kSums;
}

void first_conv_relu_forward(const void* x, const void* w, const float* bias, void* y, const FirstConvShape& s,
                             Layout layout, DType dtype, cudaStream_t stream) {
  check_shape(s, "first_conv_relu_forward");
  const int64_t total = s.n * s.k * s.p * s.q;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_index(largest_tensor(s), [&](auto index) {
      using I = typename decltype(index)::type;
      const auto xt = static_cast<const T*>(x);
      const auto wt = static_cast<const T*>(w);
      const auto yt = static_cast<T*>(y);
      if (layout == Layout::NHWC)
        first_conv_forward_nhwc_kernel<T, I><<<grid_for(total), kThreads, 0, stream>>>(
            xt, wt, bias, yt, geometry_of<I>(s), static_cast<I>(s.n * s.p * s.q));
      else
        first_conv_forward_nchw_kernel<T, I><<<grid_for(total), kThreads, 0, stream>>>(
            xt, wt, bias, yt, geometry_of<I>(s), static_cast<I>(total));
    });
  });
  CHECK_CUDA_LAUNCH();
}

void first_conv_relu_backward(const void* x, const void* y, const void* dy, float* grads, float* workspace,
                              const FirstConvShape& s, Layout layout, DType dtype, cudaStream_t stream) {
  check_shape(s, "first_conv_relu_backward");
  const bool tiles = takes_tiles(s, layout);
  const int64_t rows = tiles ? std::min<int64_t>(tile_count(s), kMaxPartialSumRows) : partial_rows(s);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_index(largest_tensor(s), [&](auto index) {
      using I = typename decltype(index)::type;
      const auto xt = static_cast<const T*>(x);
      const auto yt = static_cast<const T*>(y);
      const auto dyt = static_cast<const T*>(dy);
      const auto positions = static_cast<I>(s.n * s.p * s.q);
      const auto blocks = static_cast<unsigned int>(rows);
      if (tiles) {
        const size_t shared = (static_cast<size_t>(tile_input_rows(s) * s.w) + kSums * kTileThreads) * sizeof(float);
        first_conv_backward_tiles_kernel<T, I><<<blocks, kTileThreads, shared, stream>>>(
            xt, yt, dyt, workspace, geometry_of<I>(s), static_cast<I>(tile_count(s)));
      } else if (layout == Layout::NHWC) {
        first_conv_backward_kernel<T, I, true><<<blocks, kBackwardThreads, 0, stream>>>(xt, yt, dyt, workspace,
                                                                                      geometry_of<I>(s), positions);
      } else {
        first_conv_backward_kernel<T, I, false><<<blocks, kBackwardThreads, 0, stream>>>(xt, yt, dyt, workspace,
                                                                                       geometry_of<I>(s), positions);
      }
    });
  });
  CHECK_CUDA_LAUNCH();
  sum_partial_rows(workspace, rows, s.k * kSums, grads, stream);
}

}  // namespace sb::kernels
