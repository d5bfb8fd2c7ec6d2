#include "kernels/device_utils.cuh"
#include "kernels/partial_sums.h"
#include "kernels/small_conv.h"

namespace sb::kernels {
namespace {
using namespace detail;

constexpr int kSums = kFirstConvTaps + 1;  // the 9 taps' weight gradients and the bias gradient

struct OutIndex {
  int64_t n, k, p, q;
};

// The logical position of element i of the output in its storage order.
__device__ __forceinline__ OutIndex out_index(int64_t i, const FirstConvShape& s, bool nhwc) {
  OutIndex o;
  if (nhwc) {
    o.k = i % s.k;
    i /= s.k;
    o.q = i % s.q;
    i /= s.q;
    o.p = i % s.p;
    o.n = i / s.p;
  } else {
    o.q = i % s.q;
    i /= s.q;
    o.p = i % s.p;
    i /= s.p;
    o.k = i % s.k;
    o.n = i / s.k;
  }
  return o;
}

__device__ __forceinline__ int64_t out_offset(const OutIndex& o, const FirstConvShape& s, bool nhwc) {
  return nhwc ? ((o.n * s.p + o.p) * s.q + o.q) * s.k + o.k : ((o.n * s.k + o.k) * s.p + o.p) * s.q + o.q;
}

// The 9 input values under the output pixel (p, q) of sample n, zero outside the image.
template <typename T>
__device__ __forceinline__ void load_window(const T* x, int64_t n, int64_t p, int64_t q, const FirstConvShape& s,
                                            float v[kFirstConvTaps]) {
  const int64_t h0 = p * s.stride - s.pad, w0 = q * s.stride - s.pad;
  const T* img = x + n * s.h * s.w;
#pragma unroll
  for (int r = 0; r < 3; ++r)
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      const int64_t h = h0 + r, w = w0 + c;
      v[r * 3 + c] = (h >= 0 && h < s.h && w >= 0 && w < s.w) ? to_float(img[h * s.w + w]) : 0.0f;
    }
}

template <typename T>
__global__ void first_conv_forward_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                          const float* __restrict__ bias, T* __restrict__ y, FirstConvShape s,
                                          bool nhwc, int64_t total) {
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const OutIndex o = out_index(i, s, nhwc);
    float v[kFirstConvTaps];
    load_window(x, o.n, o.p, o.q, s, v);
    float acc = 0.0f;
#pragma unroll
    for (int t = 0; t < kFirstConvTaps; ++t) acc = fmaf(v[t], to_float(w[o.k * kFirstConvTaps + t]), acc);
    const float z = to_float(from_float<T>(to_float(from_float<T>(acc)) + bias[o.k]));
    y[out_offset(o, s, nhwc)] = from_float<T>(z > 0.0f ? z : 0.0f);
  }
}

// Thread t of a block keeps channel t % k and walks the output positions with the block's other lanes of
// that channel; each block writes one row of partial sums: [k * 9 weight taps, k biases].
template <typename T>
__global__ void first_conv_backward_kernel(const T* __restrict__ x, const T* __restrict__ y,
                                           const T* __restrict__ dy, float* __restrict__ partials,
                                           FirstConvShape s, bool nhwc) {
  __shared__ float sums[kThreads][kSums];
  const int k = static_cast<int>(threadIdx.x % s.k);
  const int64_t lanes = kThreads / s.k, lane = threadIdx.x / s.k;
  const int64_t positions = s.n * s.p * s.q;
  float acc[kSums] = {};
  for (int64_t pos = blockIdx.x * lanes + lane; pos < positions; pos += static_cast<int64_t>(gridDim.x) * lanes) {
    OutIndex o;
    o.k = k;
    o.q = pos % s.q;
    o.p = (pos / s.q) % s.p;
    o.n = pos / (s.q * s.p);
    const int64_t at = out_offset(o, s, nhwc);
    if (!(to_float(y[at]) > 0.0f)) continue;
    const float g = to_float(dy[at]);
    float v[kFirstConvTaps];
    load_window(x, o.n, o.p, o.q, s, v);
#pragma unroll
    for (int t = 0; t < kFirstConvTaps; ++t) acc[t] = fmaf(g, v[t], acc[t]);
    acc[kFirstConvTaps] += g;
  }
#pragma unroll
  for (int j = 0; j < kSums; ++j) sums[threadIdx.x][j] = acc[j];
  __syncthreads();
  if (lane != 0) return;
  float* row = partials + static_cast<int64_t>(blockIdx.x) * s.k * kSums;
  for (int j = 0; j < kSums; ++j) {
    float total = 0.0f;
    for (int64_t l = 0; l < lanes; ++l) total += sums[l * s.k + k][j];
    if (j < kFirstConvTaps) row[k * kFirstConvTaps + j] = total;
    else row[s.k * kFirstConvTaps + k] = total;
  }
}

int64_t partial_rows(const FirstConvShape& s) {
  const int64_t lanes = kThreads / s.k, positions = s.n * s.p * s.q;
  const int64_t wanted = (positions + lanes - 1) / lanes;
  return wanted < 1 ? 1 : (wanted < kMaxPartialSumRows ? wanted : kMaxPartialSumRows);
}

void check_shape(const FirstConvShape& s, const char* what) {
  if (!first_conv_supports(s.k))
    fatal(std::string(what) + ": " + std::to_string(s.k) + " output channels (needs a power of two up to 256)");
  if (s.n <= 0 || s.p <= 0 || s.q <= 0 || s.stride <= 0 || s.pad < 0)
    fatal(std::string(what) + ": empty or invalid shape");
}

}  // namespace

bool first_conv_supports(int64_t k) { return k >= 1 && k <= kThreads && (k & (k - 1)) == 0; }

int64_t first_conv_backward_workspace(const FirstConvShape& s) { return partial_rows(s) * s.k * kSums; }

void first_conv_relu_forward(const void* x, const void* w, const float* bias, void* y, const FirstConvShape& s,
                             Layout layout, DType dtype, cudaStream_t stream) {
  check_shape(s, "first_conv_relu_forward");
  const int64_t total = s.n * s.k * s.p * s.q;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    first_conv_forward_kernel<T><<<grid_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(w), bias, static_cast<T*>(y), s, layout == Layout::NHWC, total);
  });
  CHECK_CUDA_LAUNCH();
}

void first_conv_relu_backward(const void* x, const void* y, const void* dy, float* grads, float* workspace,
                              const FirstConvShape& s, Layout layout, DType dtype, cudaStream_t stream) {
  check_shape(s, "first_conv_relu_backward");
  const int64_t rows = partial_rows(s);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    first_conv_backward_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(y), static_cast<const T*>(dy), workspace, s,
        layout == Layout::NHWC);
  });
  CHECK_CUDA_LAUNCH();
  sum_partial_rows(workspace, rows, s.k * kSums, grads, stream);
}

}  // namespace sb::kernels
