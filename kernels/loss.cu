// Loss kernels (see loss.h). A warp owns a row: lanes stride over the classes, warp shuffles give the row
// max / arg-max / sums. Losses that feed the batch mean run as ONE block, so the per-row losses are summed
// in a fixed order (each warp its rows in order, then the warps in order, in double) and the batch mean,
// the counters and the gradient come out of a single launch with no atomics on the data path.
#include "kernels/loss.h"

#include <type_traits>

#include "kernels/device_utils.cuh"

namespace sb::kernels {
namespace {
using namespace detail;

constexpr int kLossThreads = 1024;
constexpr int kLossWarps = kLossThreads / 32;

// Max and its first index over a row held by a warp. Ties go to the lower index, matching
// std::max_element (the CPU's count_correct).
struct MaxArg {
  float value;
  int64_t index;
};

// The warp's arg-max from each lane's own (index -1: the lane holds none).
__device__ MaxArg warp_argmax(MaxArg best) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, best.value, offset);
    const int64_t oi = __shfl_xor_sync(0xffffffffu, best.index, offset);
    const bool take = oi >= 0 && (best.index < 0 || ov > best.value || (ov == best.value && oi < best.index));
    if (take) best = MaxArg{ov, oi};
  }
  return best;
}

template <typename T>
__device__ MaxArg warp_row_argmax(const T* row, int64_t c, int lane) {
  MaxArg best{-INFINITY, -1};
  for (int64_t j = lane; j < c; j += 32) {
    const float v = to_float(row[j]);
    if (best.index < 0 || v > best.value) best = MaxArg{v, j};  // lanes scan increasing j: first wins
  }
  return warp_argmax(best);
}

// Combines the per-warp row sums in warp order and publishes the batch results. Called by all threads.
__device__ void finish_batch(double warp_loss, unsigned long long warp_correct, int64_t n, float* loss_out,
                             LossCounters* counters) {
  __shared__ double losses[kLossWarps];
  __shared__ unsigned long long corrects[kLossWarps];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) {
    losses[warp] = warp_loss;
    corrects[warp] = warp_correct;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    unsigned long long correct = 0;
    for (int w = 0; w < kLossWarps; ++w) {
      total += losses[w];
      correct += corrects[w];
    }
    if (loss_out) *loss_out = static_cast<float>(total / static_cast<double>(n));
    if (counters) {
      counters->loss_sum += total;  // one block: plain read-modify-write, ordered by the stream
      counters->correct += correct;
      counters->samples += static_cast<unsigned long long>(n);
    }
  }
}

// A row's arg-max and loss term (only read where the row's label is in range).
struct RowLoss {
  MaxArg best;
  float loss;
};

// The batch loop of the losses: warp w takes rows w, w + kLossWarps, ... in order; row(r, label, valid,
// lane) writes row r's gradient and returns its RowLoss; lane 0 sums the losses (NaN for a bad label)
// and the correct predictions. Called by every thread of the one block.
template <typename Row>
__device__ void sum_rows_then_finish(const int32_t* labels, int64_t n, int64_t c, float* loss_out,
                                     LossCounters* counters, Row row) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  double warp_loss = 0.0;
  unsigned long long warp_correct = 0;
  for (int64_t r = warp; r < n; r += kLossWarps) {
    const int label = labels[r];
    const bool valid = label >= 0 && label < c;  // a bad label makes the loss NaN rather than read astray
    const RowLoss got = row(r, label, valid, lane);
    if (lane == 0) {
      warp_loss += valid ? static_cast<double>(got.loss) : NAN;
      warp_correct += got.best.index == label ? 1 : 0;
    }
  }
  finish_batch(warp_loss, warp_correct, n, loss_out, counters);
}

__device__ __forceinline__ float gradient_scale(float grad_scale, const float* loss_scale, int64_t n) {
  const float s = loss_scale ? grad_scale * *loss_scale : grad_scale;
  return s / static_cast<float>(n);
}

// Arg-max over the K values a lane holds for a row (value j = lane + 32k), then across the warp.
template <int K>
__device__ MaxArg warp_cached_argmax(const float (&v)[K], int64_t c, int lane) {
  MaxArg best{-INFINITY, -1};
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = lane + 32 * k;
    if (j < c && (best.index < 0 || v[k] > best.value)) best = MaxArg{v[k], j};
  }
  return warp_argmax(best);
}

// K > 0: rows of up to 32*K classes are read once into registers (one memory round trip per row instead
// of three); K == 0: any number of classes, re-reading the row (it is in L1/L2 by then).
template <typename T, int K>
__global__ void __launch_bounds__(kLossThreads) softmax_cross_entropy_kernel(
    const T* __restrict__ logits, const int32_t* __restrict__ labels, T* __restrict__ dlogits, int64_t n, int64_t c,
    float grad_scale, const float* loss_scale, float* loss_out, LossCounters* counters) {
  const float g = gradient_scale(grad_scale, loss_scale, n);
  sum_rows_then_finish(labels, n, c, loss_out, counters, [&](int64_t r, int label, bool valid, int lane) {
    const T* x = logits + r * c;
    float v[K > 0 ? K : 1];
    MaxArg best;
    float sum = 0.0f;
    if constexpr (K > 0) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int64_t j = lane + 32 * k;
        v[k] = j < c ? to_float(x[j]) : 0.0f;
      }
      best = warp_cached_argmax<K>(v, c, lane);
#pragma unroll
      for (int k = 0; k < K; ++k) {
        v[k] = lane + 32 * k < c ? expf(v[k] - best.value) : 0.0f;  // v now holds exp(x - max)
        sum += v[k];
      }
    } else {
      best = warp_row_argmax(x, c, lane);
      for (int64_t j = lane; j < c; j += 32) sum += expf(to_float(x[j]) - best.value);
    }
    sum = warp_sum(sum);
    const float log_sum = logf(sum);
    if (dlogits) {
      T* d = dlogits + r * c;
      const float inv_sum = g / sum;
      if constexpr (K > 0) {
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int64_t j = lane + 32 * k;
          if (j < c) {
            const float p = v[k] * inv_sum;
            d[j] = from_float<T>(j == label ? p - g : p);
          }
        }
      } else {
        for (int64_t j = lane; j < c; j += 32) {
          const float p = expf(to_float(x[j]) - best.value) * inv_sum;
          d[j] = from_float<T>(j == label ? p - g : p);
        }
      }
    }
    return RowLoss{best, valid ? best.value + log_sum - to_float(x[label]) : 0.0f};
  });
}

template <typename T>
__global__ void __launch_bounds__(kLossThreads) nll_loss_kernel(const T* __restrict__ logp,
                                                                 const int32_t* __restrict__ labels,
                                                                 T* __restrict__ dlogp, int64_t n, int64_t c,
                                                                 float grad_scale, const float* loss_scale,
                                                                 float* loss_out, LossCounters* counters) {
  const float g = gradient_scale(grad_scale, loss_scale, n);
  sum_rows_then_finish(labels, n, c, loss_out, counters, [&](int64_t r, int label, bool valid, int lane) {
    const T* x = logp + r * c;
    if (dlogp) {
      T* d = dlogp + r * c;
      for (int64_t j = lane; j < c; j += 32) d[j] = from_float<T>(j == label ? -g : 0.0f);
    }
    return RowLoss{warp_row_argmax(x, c, lane), valid ? -to_float(x[label]) : 0.0f};
  });
}

// Row-parallel kernels (no batch reduction): a warp per row, many blocks.
constexpr int kRowWarps = kThreads / 32;

template <typename T>
__global__ void log_softmax_forward_kernel(const T* x, T* y, int64_t n, int64_t c) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kRowWarps + (threadIdx.x >> 5); r < n;
       r += static_cast<int64_t>(gridDim.x) * kRowWarps) {
    const T* in = x + r * c;
    float m = -INFINITY;
    for (int64_t j = lane; j < c; j += 32) m = fmaxf(m, to_float(in[j]));
    m = warp_max(m);
    float sum = 0.0f;
    for (int64_t j = lane; j < c; j += 32) sum += expf(to_float(in[j]) - m);
    const float shift = m + logf(warp_sum(sum));
    __syncwarp();  // every lane has read the row before any lane overwrites it (y may alias x)
    T* out = y + r * c;
    for (int64_t j = lane; j < c; j += 32) out[j] = from_float<T>(to_float(in[j]) - shift);
  }
}

template <typename T>
__global__ void log_softmax_backward_kernel(const T* y, const T* dy, T* dx, int64_t n, int64_t c) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kRowWarps + (threadIdx.x >> 5); r < n;
       r += static_cast<int64_t>(gridDim.x) * kRowWarps) {
    const T* yr = y + r * c;
    const T* g = dy + r * c;
    float total = 0.0f;
    for (int64_t j = lane; j < c; j += 32) total += to_float(g[j]);
    total = warp_sum(total);
    T* out = dx + r * c;
    for (int64_t j = lane; j < c; j += 32) out[j] = from_float<T>(to_float(g[j]) - expf(to_float(yr[j])) * total);
  }
}

unsigned row_blocks(int64_t n) {
  const int64_t blocks = (n + kRowWarps - 1) / kRowWarps;
  return static_cast<unsigned>(blocks < 65535 ? (blocks < 1 ? 1 : blocks) : 65535);
}

}  // namespace

void softmax_cross_entropy(const void* logits, const int32_t* labels, void* dlogits, int64_t n, int64_t c,
                           DType dtype, float grad_scale, const float* loss_scale, float* loss_out,
                           LossCounters* counters, cudaStream_t stream) {
  if (n <= 0 || c <= 0) fatal("softmax_cross_entropy: needs n, c >= 1");
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(logits);
    T* d = static_cast<T*>(dlogits);
    auto launch = [&](auto held) {
      softmax_cross_entropy_kernel<T, decltype(held)::value><<<1, kLossThreads, 0, stream>>>(
          x, labels, d, n, c, grad_scale, loss_scale, loss_out, counters);
    };
    // The fewest values a lane holds that cover the row: one block does the whole batch, so a row read in
    // one round trip (ImageNet's 1,000 classes included) keeps the loss off the step's critical path.
    if (c <= 32)
      launch(std::integral_constant<int, 1>{});
    else if (c <= 128)
      launch(std::integral_constant<int, 4>{});
    else if (c <= 256)
      launch(std::integral_constant<int, 8>{});
    else if (c <= 512)
      launch(std::integral_constant<int, 16>{});
    else if (c <= 1024)
      launch(std::integral_constant<int, 32>{});
    else
      launch(std::integral_constant<int, 0>{});
  });
  CHECK_CUDA_LAUNCH();
}

void nll_loss(const void* logp, const int32_t* labels, void* dlogp, int64_t n, int64_t c, DType dtype,
              float grad_scale, const float* loss_scale, float* loss_out, LossCounters* counters,
              cudaStream_t stream) {
  if (n <= 0 || c <= 0) fatal("nll_loss: needs n, c >= 1");
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    nll_loss_kernel<T><<<1, kLossThreads, 0, stream>>>(static_cast<const T*>(logp), labels, static_cast<T*>(dlogp), n,
                                                       c, grad_scale, loss_scale, loss_out, counters);
  });
  CHECK_CUDA_LAUNCH();
}

void log_softmax_forward(const void* x, void* y, int64_t n, int64_t c, DType dtype, cudaStream_t stream) {
  if (n <= 0 || c <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    log_softmax_forward_kernel<T><<<row_blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                           static_cast<T*>(y), n, c);
  });
  CHECK_CUDA_LAUNCH();
}

void log_softmax_backward(const void* y, const void* dy, void* dx, int64_t n, int64_t c, DType dtype,
                          cudaStream_t stream) {
  if (n <= 0 || c <= 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    log_softmax_backward_kernel<T><<<row_blocks(n), kThreads, 0, stream>>>(
        static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), n, c);
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
