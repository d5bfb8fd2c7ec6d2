// Elementwise kernels (see elementwise.h). One generic map kernel serves every pointwise op: each thread
// takes kPackElems elements per iteration through 16-byte loads and stores when every pointer is 16-byte
// aligned (the flat buffers and cudaMalloc'd activations are), and falls back to one element at a time
// otherwise. Inputs are converted to fp32 in registers, the op runs in fp32, the result is rounded once.
#include "kernels/elementwise.h"

#include <algorithm>
#include <optional>
#include <type_traits>
#include <vector>

#include "kernels/device_utils.cuh"

namespace sb::kernels {
namespace {
using namespace detail;

// out[i] = op(a[i], b[i]) (b ignored when B is void-like: HasB false). out may alias a or b: every
// element is read before it is written, by the same thread.
template <typename TA, typename TB, typename TO, bool HasB, bool Vector, typename Op>
__global__ void map_kernel(const TA* a, const TB* b, TO* out, int64_t n, Op op) {
  const int64_t stride = grid_threads();
  int64_t start = 0;
  if constexpr (Vector) {
    const int64_t packs = n / kPackElems;
    for (int64_t p = global_thread(); p < packs; p += stride) {
      const Pack<TA, kPackElems> va = reinterpret_cast<const Pack<TA, kPackElems>*>(a)[p];
      Pack<TB, kPackElems> vb;
      if constexpr (HasB) vb = reinterpret_cast<const Pack<TB, kPackElems>*>(b)[p];
      Pack<TO, kPackElems> vo;
#pragma unroll
      for (int j = 0; j < kPackElems; ++j) {
        const float fb = HasB ? to_float(vb.v[j]) : 0.0f;
        vo.v[j] = from_float<TO>(op(to_float(va.v[j]), fb));
      }
      reinterpret_cast<Pack<TO, kPackElems>*>(out)[p] = vo;
    }
    start = packs * kPackElems;
  }
  for (int64_t i = start + global_thread(); i < n; i += stride) {
    const float fb = HasB ? to_float(b[i]) : 0.0f;
    out[i] = from_float<TO>(op(to_float(a[i]), fb));
  }
}

template <typename TA, typename TB, typename TO, bool HasB, typename Op>
void launch_map(const TA* a, const TB* b, TO* out, int64_t n, Op op, cudaStream_t stream) {
  if (n <= 0) return;
  const bool vector = aligned16(a) && aligned16(out) && (!HasB || aligned16(b));
  if (vector) {
    map_kernel<TA, TB, TO, HasB, true><<<grid_for(n / kPackElems + 1), kThreads, 0, stream>>>(a, b, out, n, op);
  } else {
    map_kernel<TA, TB, TO, HasB, false><<<grid_for(n), kThreads, 0, stream>>>(a, b, out, n, op);
  }
  CHECK_CUDA_LAUNCH();
}

struct ReluOp {
  __device__ float operator()(float x, float) const { return x > 0.0f ? x : 0.0f; }
};
struct ReluBackwardOp {  // a = y, b = dy
  __device__ float operator()(float y, float dy) const { return y > 0.0f ? dy : 0.0f; }
};
struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct ScaleOp {
  float alpha;
  __device__ float operator()(float x, float) const { return alpha * x; }
};
struct CopyOp {
  __device__ float operator()(float x, float) const { return x; }
};

// ---- layout transposes: each image is a [rows, cols] matrix transposed to [cols, rows] ----
constexpr int kTile = 32;
constexpr int kTileRows = 8;

// One element from TIn to TOut: a plain copy when they match (every bit kept), else through fp32.
template <typename TIn, typename TOut>
__device__ __forceinline__ TOut convert_element(TIn v) {
  if constexpr (std::is_same_v<TIn, TOut>) {
    return v;
  } else {
    return from_float<TOut>(to_float(v));
  }
}

// src is [batch][rows][cols] in TIn, dst [batch][cols][rows] in TOut (a widening transpose when they
// differ). Tiles through shared memory (in TOut) so that both the reads and the writes are coalesced; the
// +1 column avoids bank conflicts.
template <typename TIn, typename TOut>
__global__ void transpose_kernel(const TIn* __restrict__ src, TOut* __restrict__ dst, int64_t rows, int64_t cols) {
  __shared__ TOut tile[kTile][kTile + 1];
  const int64_t image = blockIdx.z;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTile, col0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const TIn* in = src + image * rows * cols;
  TOut* out = dst + image * rows * cols;
  for (int r = threadIdx.y; r < kTile; r += kTileRows) {
    const int64_t row = row0 + r, col = col0 + threadIdx.x;
    if (row < rows && col < cols) tile[r][threadIdx.x] = convert_element<TIn, TOut>(in[row * cols + col]);
  }
  __syncthreads();
  for (int c = threadIdx.y; c < kTile; c += kTileRows) {
    const int64_t col = col0 + c, row = row0 + threadIdx.x;
    if (row < rows && col < cols) out[col * rows + row] = tile[threadIdx.x][c];
  }
}

// The same for thin matrices (a side shorter than a tile, e.g. a 3x3 filter's 9 taps against its channels):
// 32x32 tiles would leave most of each block idle, so each thread writes one output element, in order,
// and reads its input through the cache.
template <typename TIn, typename TOut>
__global__ void transpose_thin_kernel(const TIn* __restrict__ src, TOut* __restrict__ dst, int64_t rows, int64_t cols,
                                      int64_t total) {
  const int64_t matrix = rows * cols;
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t image = o / matrix, within = o - image * matrix;
    const int64_t col = within / rows, row = within - col * rows;
    dst[o] = convert_element<TIn, TOut>(src[image * matrix + row * cols + col]);
  }
}

// dst_dtype: the output's element type; `dtype` (the input's) when it is not widened.
void launch_transpose(const void* src, void* dst, int64_t batch, int64_t rows, int64_t cols, DType dtype,
                      cudaStream_t stream, std::optional<DType> dst_dtype = std::nullopt) {
  if (batch <= 0 || rows <= 0 || cols <= 0) return;
  const bool thin = rows < kTile || cols < kTile;
  if (!thin && batch > 65535) fatal("nchw/nhwc transpose: batch " + std::to_string(batch) + " exceeds 65535");
  const int64_t total = batch * rows * cols;
  const int thin_threads = 256;
  const auto thin_blocks = static_cast<unsigned>(std::min<int64_t>((total + thin_threads - 1) / thin_threads, 65535 * 8));
  const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>((rows + kTile - 1) / kTile),
                  static_cast<unsigned>(thin ? 1 : batch));
  const dim3 block(kTile, kTileRows);
  dispatch_dtype(dtype, [&](auto in_tag) {
    using TIn = typename decltype(in_tag)::type;
    dispatch_dtype(dst_dtype.value_or(dtype), [&](auto out_tag) {
      using TOut = typename decltype(out_tag)::type;
      const auto* in = static_cast<const TIn*>(src);
      auto* out = static_cast<TOut*>(dst);
      if (thin) {
        transpose_thin_kernel<TIn, TOut><<<thin_blocks, thin_threads, 0, stream>>>(in, out, rows, cols, total);
      } else {
        transpose_kernel<TIn, TOut><<<grid, block, 0, stream>>>(in, out, rows, cols);
      }
    });
  });
  CHECK_CUDA_LAUNCH();
}

// ---- bias add: y[i] += bias[channel(i)] ----
template <bool Nhwc>
__device__ __forceinline__ int64_t channel_of(int64_t i, int64_t c, int64_t hw) {
  return Nhwc ? i % c : (i / hw) % c;
}

// A pack of kPackElems consecutive elements starts at channel c0 (and position r0 within its channel run
// in NCHW); the next elements' channels follow by counting, so each pack costs one division, not eight.
// The ragged tail (and misaligned y) goes one element at a time.
template <typename TY, typename TB, bool Nhwc, bool Vector>
__global__ void bias_add_kernel(TY* y, const TB* __restrict__ bias, int64_t total, int64_t c, int64_t hw) {
  const int64_t stride = grid_threads();
  int64_t start = 0;
  if constexpr (Vector) {
    const int64_t packs = total / kPackElems;
    for (int64_t p = global_thread(); p < packs; p += stride) {
      const int64_t i0 = p * kPackElems;
      int64_t ch = channel_of<Nhwc>(i0, c, hw), pos = Nhwc ? 0 : i0 % hw;
      Pack<TY, kPackElems> v = reinterpret_cast<const Pack<TY, kPackElems>*>(y)[p];
#pragma unroll
      for (int j = 0; j < kPackElems; ++j) {
        v.v[j] = from_float<TY>(to_float(v.v[j]) + to_float(bias[ch]));
        if constexpr (Nhwc) {
          if (++ch == c) ch = 0;
        } else if (++pos == hw) {
          pos = 0;
          if (++ch == c) ch = 0;
        }
      }
      reinterpret_cast<Pack<TY, kPackElems>*>(y)[p] = v;
    }
    start = packs * kPackElems;
  }
  for (int64_t i = start + global_thread(); i < total; i += stride)
    y[i] = from_float<TY>(to_float(y[i]) + to_float(bias[channel_of<Nhwc>(i, c, hw)]));
}

// ---- bias backward: dbias[c] = sum of dy over n, h, w; fixed order, no atomics ----
constexpr int kReduceThreads = 256;

// NCHW: one block per channel; the block strides over the n contiguous runs of hw elements.
template <typename T>
__global__ void bias_backward_nchw_kernel(const T* __restrict__ dy, float* dbias, int64_t n, int64_t c, int64_t hw,
                                          bool accumulate) {
  const int64_t ch = blockIdx.x;
  float sum = 0.0f;
  const int64_t per_channel = n * hw;
  for (int64_t k = threadIdx.x; k < per_channel; k += blockDim.x) {
    const int64_t image = k / hw, pos = k - image * hw;
    sum += to_float(dy[(image * c + ch) * hw + pos]);
  }
  __shared__ float partial[kReduceThreads / 32];
  sum = warp_sum(sum);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < kReduceThreads / 32; ++w) total += partial[w];
    dbias[ch] = accumulate ? dbias[ch] + total : total;
  }
}

// NHWC: dy is a [rows = n*h*w, c] matrix. Pass 1: a grid of (channel groups of 32) x (row slices); in each
// block, 8 warps stride over the slice's rows with the 32 lanes on 32 consecutive channels (coalesced),
// and the block writes one partial sum per channel and slice. Pass 2 adds the slices in a fixed order, so
// the result is deterministic (no atomics) while the whole GPU works on the reduction: a single block per
// 32 channels left most of the GPU idle for convolutions with few channels and many pixels.
constexpr int kColumnWarps = 8;
constexpr int kRowSlices = 128;
template <typename T>
__global__ void __launch_bounds__(32 * kColumnWarps) bias_partial_nhwc_kernel(const T* __restrict__ dy,
                                                                              float* __restrict__ partial,
                                                                              int64_t rows, int64_t c,
                                                                              int64_t rows_per_slice) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * rows_per_slice;
  const int64_t end = begin + rows_per_slice < rows ? begin + rows_per_slice : rows;
  float sum = 0.0f;
  if (ch < c)
    for (int64_t r = begin + threadIdx.y; r < end; r += kColumnWarps) sum += to_float(dy[r * c + ch]);
  __shared__ float column[kColumnWarps][33];
  column[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && ch < c) {
    float total = 0.0f;
    for (int w = 0; w < kColumnWarps; ++w) total += column[w][threadIdx.x];
    partial[static_cast<int64_t>(blockIdx.y) * c + ch] = total;
  }
}

__global__ void bias_finish_kernel(const float* __restrict__ partial, float* dbias, int slices, int64_t c,
                                   bool accumulate) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  float total = 0.0f;
  for (int s = 0; s < slices; ++s) total += partial[s * c + ch];
  dbias[ch] = accumulate ? dbias[ch] + total : total;
}

// The partial sums' scratch space, one per device and host thread (DataParallel drives each GPU from a
// thread of its own, and a buffer shared between them would be raced on and freed under the other's
// kernels): grows on first use at each size (in the eager warm-up steps, never inside a CUDA-graph
// capture, where allocation is not allowed) and is reused after.
float* bias_scratch(size_t floats) {
  struct Scratch {
    float* data = nullptr;
    size_t capacity = 0;
  };
  thread_local std::vector<Scratch> per_device;
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  if (per_device.size() <= static_cast<size_t>(device)) per_device.resize(static_cast<size_t>(device) + 1);
  Scratch& scratch = per_device[static_cast<size_t>(device)];
  if (floats > scratch.capacity) {
    if (scratch.data) CHECK_CUDA(cudaFree(scratch.data));
    CHECK_CUDA(cudaMalloc(&scratch.data, floats * sizeof(float)));
    scratch.capacity = floats;
  }
  return scratch.data;
}

}  // namespace

void relu_forward(const void* x, void* y, int64_t n, DType dtype, cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_map<T, T, T, false>(static_cast<const T*>(x), static_cast<const T*>(nullptr), static_cast<T*>(y), n,
                               ReluOp{}, stream);
  });
}

void relu_backward(const void* y, const void* dy, void* dx, int64_t n, DType dtype, cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_map<T, T, T, true>(static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), n,
                              ReluBackwardOp{}, stream);
  });
}

void add(const void* a, const void* b, void* out, int64_t n, DType dtype, cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_map<T, T, T, true>(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), n, AddOp{},
                              stream);
  });
}

void scale(const void* x, void* y, float alpha, int64_t n, DType dtype, cudaStream_t stream) {
  scale_cast(x, dtype, y, dtype, alpha, n, stream);
}

void cast(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n, cudaStream_t stream) {
  if (src_dtype == dst_dtype) {
    if (n > 0 && src != dst)
      CHECK_CUDA(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * dtype_size(src_dtype), cudaMemcpyDeviceToDevice,
                                 stream));
    return;
  }
  dispatch_dtype(src_dtype, [&](auto src_tag) {
    using TS = typename decltype(src_tag)::type;
    dispatch_dtype(dst_dtype, [&](auto dst_tag) {
      using TD = typename decltype(dst_tag)::type;
      launch_map<TS, TS, TD, false>(static_cast<const TS*>(src), static_cast<const TS*>(nullptr),
                                    static_cast<TD*>(dst), n, CopyOp{}, stream);
    });
  });
}

void scale_cast(const void* src, DType src_dtype, void* dst, DType dst_dtype, float alpha, int64_t n,
                cudaStream_t stream) {
  dispatch_dtype(src_dtype, [&](auto src_tag) {
    using TS = typename decltype(src_tag)::type;
    dispatch_dtype(dst_dtype, [&](auto dst_tag) {
      using TD = typename decltype(dst_tag)::type;
      launch_map<TS, TS, TD, false>(static_cast<const TS*>(src), static_cast<const TS*>(nullptr),
                                    static_cast<TD*>(dst), n, ScaleOp{alpha}, stream);
    });
  });
}

void accumulate_into_f32(const void* src, DType src_dtype, float* dst, int64_t n, bool accumulate,
                         cudaStream_t stream) {
  if (!accumulate) {
    cast(src, src_dtype, dst, DType::F32, n, stream);
    return;
  }
  // dst = dst + src: a is the fp32 buffer, b the incoming gradient.
  dispatch_dtype(src_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_map<float, T, float, true>(dst, static_cast<const T*>(src), dst, n, AddOp{}, stream);
  });
}

void nchw_to_nhwc(const void* src, void* dst, int64_t n, int64_t c, int64_t h, int64_t w, DType dtype,
                  cudaStream_t stream) {
  launch_transpose(src, dst, n, c, h * w, dtype, stream);  // [c][hw] -> [hw][c]
}

void nhwc_to_nchw(const void* src, void* dst, int64_t n, int64_t c, int64_t h, int64_t w, DType dtype,
                  cudaStream_t stream) {
  launch_transpose(src, dst, n, h * w, c, dtype, stream);  // [hw][c] -> [c][hw]
}

void krsc_to_kcrs_f32(const void* src, DType src_dtype, float* dst, int64_t k, int64_t c, int64_t r, int64_t s,
                      cudaStream_t stream) {
  launch_transpose(src, dst, k, r * s, c, src_dtype, stream, DType::F32);  // per filter [rs][c] -> [c][rs]
}

void bias_add(void* y, DType y_dtype, const void* bias, DType bias_dtype, int64_t n, int64_t c, int64_t h,
              int64_t w, Layout layout, cudaStream_t stream) {
  const int64_t total = n * c * h * w;
  if (total <= 0) return;
  // With h = w = 1 both layouts are [n, c]: the NHWC indexing (channel = i % c) serves both.
  const bool nhwc = layout == Layout::NHWC || h * w == 1;
  const bool vector = aligned16(y);
  const unsigned grid = grid_for(vector ? total / kPackElems + 1 : total);
  dispatch_dtype(y_dtype, [&](auto y_tag) {
    using TY = typename decltype(y_tag)::type;
    dispatch_dtype(bias_dtype, [&](auto b_tag) {
      using TB = typename decltype(b_tag)::type;
      TY* py = static_cast<TY*>(y);
      const TB* pb = static_cast<const TB*>(bias);
      if (nhwc && vector) bias_add_kernel<TY, TB, true, true><<<grid, kThreads, 0, stream>>>(py, pb, total, c, h * w);
      if (nhwc && !vector) bias_add_kernel<TY, TB, true, false><<<grid, kThreads, 0, stream>>>(py, pb, total, c, h * w);
      if (!nhwc && vector) bias_add_kernel<TY, TB, false, true><<<grid, kThreads, 0, stream>>>(py, pb, total, c, h * w);
      if (!nhwc && !vector)
        bias_add_kernel<TY, TB, false, false><<<grid, kThreads, 0, stream>>>(py, pb, total, c, h * w);
    });
  });
  CHECK_CUDA_LAUNCH();
}

void bias_backward(const void* dy, DType dy_dtype, float* dbias, int64_t n, int64_t c, int64_t h, int64_t w,
                   Layout layout, bool accumulate, cudaStream_t stream) {
  if (c <= 0) return;
  const int64_t hw = h * w;
  dispatch_dtype(dy_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (layout == Layout::NHWC || hw == 1) {
      const int64_t rows = n * hw;
      const int slices = static_cast<int>(std::min<int64_t>(kRowSlices, (rows + kColumnWarps * 4 - 1) / (kColumnWarps * 4)));
      const int64_t rows_per_slice = (rows + slices - 1) / slices;
      float* partial = bias_scratch(static_cast<size_t>(slices) * static_cast<size_t>(c));
      const dim3 block(32, kColumnWarps), grid(static_cast<unsigned>((c + 31) / 32), static_cast<unsigned>(slices));
      bias_partial_nhwc_kernel<T><<<grid, block, 0, stream>>>(static_cast<const T*>(dy), partial, rows, c, rows_per_slice);
      CHECK_CUDA_LAUNCH();
      bias_finish_kernel<<<static_cast<unsigned>((c + 255) / 256), 256, 0, stream>>>(partial, dbias, slices, c, accumulate);
    } else {
      bias_backward_nchw_kernel<T><<<static_cast<unsigned>(c), kReduceThreads, 0, stream>>>(
          static_cast<const T*>(dy), dbias, n, c, hw, accumulate);
    }
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
