#include "kernels/device_utils.cuh"
#include "kernels/dropout_mask.cuh"
#include "kernels/partial_sums.h"
#include "kernels/pool_dropout.h"

namespace sb::kernels {
namespace {
using namespace detail;


// One pool window: its 4 elements' offsets in z and the ReLU of z + bias at each, rounded as stored.
struct Window {
  int64_t at[4];
  float v[4];
  int64_t flat;  // the pool output's logical NCHW index (the flattened position and the mask index)
};

// Pool output element i, counted channel-fastest (n, ph, pw, c): thread t of a block keeps channel t % c.
template <typename T>
__device__ __forceinline__ Window window_at(const T* z, const float* bias, int64_t i, const PoolDropoutShape& s,
                                            bool nhwc) {
  const int64_t ph_count = s.h / 2, pw_count = s.w / 2;
  const int64_t c = i % s.c;
  int64_t r = i / s.c;
  const int64_t pw = r % pw_count;
  r /= pw_count;
  const int64_t ph = r % ph_count, n = r / ph_count;
  Window win;
  win.flat = ((n * s.c + c) * ph_count + ph) * pw_count + pw;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int64_t h = 2 * ph + (j >> 1), w = 2 * pw + (j & 1);
    win.at[j] = nhwc ? ((n * s.h + h) * s.w + w) * s.c + c : ((n * s.c + c) * s.h + h) * s.w + w;
    const float zb = to_float(from_float<T>(to_float(z[win.at[j]]) + bias[c]));
    win.v[j] = zb > 0.0f ? zb : 0.0f;
  }
  return win;
}

// The first maximum of the window, as the max-pool kernels and the CPU find it.
__device__ __forceinline__ int arg_max(const Window& win) {
  int best = 0;
#pragma unroll
  for (int j = 1; j < 4; ++j)
    if (win.v[j] > win.v[best]) best = j;
  return best;
}

__device__ __forceinline__ bool kept(const DropoutMask& d, bool dropping, uint64_t step, int64_t flat) {
  return !dropping || mask_keeps_at(d, step, static_cast<uint64_t>(flat));
}

template <typename T>
__global__ void pool_dropout_forward_kernel(const T* __restrict__ z, const float* __restrict__ bias,
                                            T* __restrict__ y, PoolDropoutShape s, bool nhwc, DropoutMask d,
                                            bool dropping, int64_t total) {
  const uint64_t step = mask_step(d);
  for (int64_t i = global_thread(); i < total; i += grid_threads()) {
    const Window win = window_at(z, bias, i, s, nhwc);
    const float m = win.v[arg_max(win)];
    y[win.flat] = kept(d, dropping, step, win.flat) ? from_float<T>(dropping ? m * d.scale : m) : from_float<T>(0.0f);
  }
}

template <typename T>
__global__ void pool_dropout_backward_kernel(const T* __restrict__ z, const float* __restrict__ bias,
                                             const T* __restrict__ dy, T* __restrict__ dz,
                                             float* __restrict__ partials, PoolDropoutShape s, bool nhwc,
                                             DropoutMask d, bool dropping, int64_t total) {
  __shared__ float sums[kThreads];
  const uint64_t step = mask_step(d);
  float acc = 0.0f;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const Window win = window_at(z, bias, i, s, nhwc);
    const int best = arg_max(win);
    float g = 0.0f;
    if (win.v[best] > 0.0f && kept(d, dropping, step, win.flat)) {
      const float dyv = to_float(dy[win.flat]);
      g = to_float(from_float<T>(dropping ? dyv * d.scale : dyv));
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) dz[win.at[j]] = from_float<T>(j == best ? g : 0.0f);
    acc += g;
  }
  // Thread t holds channel t % c (the grid's stride is a multiple of c): add the block's lanes of each channel.
  sums[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x >= s.c) return;
  float total_c = 0.0f;
  for (int64_t l = threadIdx.x; l < kThreads; l += s.c) total_c += sums[l];
  partials[static_cast<int64_t>(blockIdx.x) * s.c + threadIdx.x] = total_c;
}

int64_t partial_rows(const PoolDropoutShape& s) {
  const int64_t total = s.n * s.c * (s.h / 2) * (s.w / 2);
  const int64_t wanted = (total + kThreads - 1) / kThreads;
  return wanted < 1 ? 1 : (wanted < kMaxPartialSumRows ? wanted : kMaxPartialSumRows);
}

void check_shape(const PoolDropoutShape& s, const char* what) {
  if (!pool_dropout_supports(s.c))
    fatal(std::string(what) + ": " + std::to_string(s.c) + " channels (needs a power of two up to 256)");
  if (s.n <= 0 || s.h < 2 || s.w < 2) fatal(std::string(what) + ": the input is smaller than one 2x2 window");
}

DropoutMask device_mask(const PoolDropoutMask& m, const char* what) {
  return make_dropout_mask(m.p, m.key, m.step, m.step_device, m.first_element, what);
}

}  // namespace

bool pool_dropout_supports(int64_t c) { return c >= 1 && c <= kThreads && (c & (c - 1)) == 0; }

int64_t pool_dropout_backward_workspace(const PoolDropoutShape& s) { return partial_rows(s) * s.c; }

void bias_relu_pool_dropout_forward(const void* z, const float* bias, void* y, const PoolDropoutShape& s,
                                    const PoolDropoutMask& mask, Layout layout, DType dtype, cudaStream_t stream) {
  check_shape(s, "bias_relu_pool_dropout_forward");
  const DropoutMask d = device_mask(mask, "bias_relu_pool_dropout_forward");
  const int64_t total = s.n * s.c * (s.h / 2) * (s.w / 2);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    pool_dropout_forward_kernel<T><<<grid_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(z), bias, static_cast<T*>(y), s, layout == Layout::NHWC, d, mask.p > 0.0, total);
  });
  CHECK_CUDA_LAUNCH();
}

void bias_relu_pool_dropout_backward(const void* z, const float* bias, const void* dy, void* dz, float* dbias,
                                     float* workspace, const PoolDropoutShape& s, const PoolDropoutMask& mask,
                                     Layout layout, DType dtype, cudaStream_t stream) {
  check_shape(s, "bias_relu_pool_dropout_backward");
  const DropoutMask d = device_mask(mask, "bias_relu_pool_dropout_backward");
  const int64_t total = s.n * s.c * (s.h / 2) * (s.w / 2);
  // Rows and columns past an even size are outside every window: their gradient is zero.
  if (s.h % 2 != 0 || s.w % 2 != 0)
    CHECK_CUDA(cudaMemsetAsync(dz, 0, static_cast<size_t>(s.n * s.c * s.h * s.w) * dtype_size(dtype), stream));
  const int64_t rows = partial_rows(s);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    pool_dropout_backward_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(
        static_cast<const T*>(z), bias, static_cast<const T*>(dy), static_cast<T*>(dz), workspace, s,
        layout == Layout::NHWC, d, mask.p > 0.0, total);
  });
  CHECK_CUDA_LAUNCH();
  sum_partial_rows(workspace, rows, s.c, dbias, stream);
}

}  // namespace sb::kernels
