// The batch-assembly kernels (see augment.h): blockIdx.x is the sample, blockIdx.y one of the parts of its
// outputs (one part for small images, enough for ImageNet-sized ones to fill the GPU). The threads draw the
// sample's crop and flip (one Philox block, the same for every thread) and walk their part in storage order,
// so the writes are coalesced in either layout; the uint8 reads are gathers within one image and mostly hit
// the caches. Where rows hold whole groups of 4 pixels, a thread takes 4 pixels of a row and all their
// channels: one index computation per 4 pixels, the normalised values looked up in a table of the 256 byte
// values per channel (computed by the same normalize_pixel, so the results are the same bits), and one
// vector store per channel's worth of outputs. The division-heavy per-element kernel serves the rest.
#include "kernels/augment.h"

#include <algorithm>
#include <type_traits>

#include "kernels/device_utils.cuh"
#include "maths/augment.h"

namespace sb::kernels {
namespace {
using namespace detail;

constexpr int kQuad = 4;  // adjacent pixels of one row per thread in gather_quads_kernel

// The sample's crop and flip (none without augmentation), as every thread of the block draws it.
__device__ __forceinline__ CropFlip sample_crop_flip(const GatherBatchArgs& a, int64_t j) {
  CropFlip t;
  if (a.random_crop || a.horizontal_flip) {
    const int64_t epoch = a.epoch_device ? *a.epoch_device : a.key.epoch;
    const uint64_t first = a.first_position_device ? *a.first_position_device : a.first_position;
    t = draw_crop_flip(a.key.seed, epoch, a.key.rank, first + static_cast<uint64_t>(j), a.random_crop ? a.crop_padding : 0);
    if (!a.horizontal_flip) t.flip = false;
  }
  return t;
}

template <typename T, bool Nhwc>
__global__ void gather_batch_kernel(GatherBatchArgs a) {
  const int64_t j = blockIdx.x;
  const int64_t index = a.indices[j];
  if (threadIdx.x == 0 && blockIdx.y == 0 && a.labels_out) a.labels_out[j] = a.labels[index];
  const CropFlip t = sample_crop_flip(a, j);
  const int C = a.channels, H = a.height, W = a.width;
  const int64_t per_sample = static_cast<int64_t>(C) * H * W;
  const uint8_t* image = a.images + index * per_sample;
  T* out = static_cast<T*>(a.out) + j * per_sample;
  const int part = static_cast<int>((per_sample + gridDim.y - 1) / gridDim.y);  // int: 32-bit index arithmetic
  const int first = static_cast<int>(blockIdx.y) * part;
  const int end = static_cast<int>(per_sample - first < part ? per_sample : first + part);
  for (int s = first + static_cast<int>(threadIdx.x); s < end; s += blockDim.x) {
    int c, y, x;
    if constexpr (Nhwc) {
      c = s % C;
      x = (s / C) % W;
      y = s / (C * W);
    } else {
      x = s % W;
      y = (s / W) % H;
      c = s / (H * W);
    }
    const int raw = crop_flip_pixel(image, H, W, c, y, x, t);
    out[s] = from_float<T>(normalize_pixel<float>(raw, a.mean[c], a.std[c]));
  }
}

// C channels (compile time, so that the thread's outputs stay in registers); width % kQuad == 0 and `out`
// 16-byte aligned (gather_quads_fit). A word holds 4 outputs: one channel's 4 pixels (NCHW) or 4 of the
// pixels' interleaved channels (NHWC), C words a thread.
template <typename T, bool Nhwc, int C>
__global__ void gather_quads_kernel(GatherBatchArgs a) {
  using Word = std::conditional_t<sizeof(T) == 4, uint4, uint2>;
  static_assert(sizeof(Word) == kQuad * sizeof(T), "a word holds 4 outputs");
  __shared__ alignas(16) unsigned char table_bytes[C * 256 * sizeof(T)];
  T* const table = reinterpret_cast<T*>(table_bytes);  // [c][raw]: normalize_pixel's value, rounded once
  for (int e = static_cast<int>(threadIdx.x); e < C * 256; e += static_cast<int>(blockDim.x))
    table[e] = from_float<T>(normalize_pixel<float>(e % 256, a.mean[e / 256], a.std[e / 256]));
  const int64_t j = blockIdx.x;
  const int64_t index = a.indices[j];
  if (threadIdx.x == 0 && blockIdx.y == 0 && a.labels_out) a.labels_out[j] = a.labels[index];
  const CropFlip t = sample_crop_flip(a, j);
  __syncthreads();
  const int H = a.height, W = a.width, plane = H * W;
  const uint8_t* image = a.images + index * static_cast<int64_t>(C) * plane;
  T* const out = static_cast<T*>(a.out) + j * static_cast<int64_t>(C) * plane;
  const int quads = plane / kQuad;
  const int part = (quads + static_cast<int>(gridDim.y) - 1) / static_cast<int>(gridDim.y);
  const int first = static_cast<int>(blockIdx.y) * part;
  const int end = min(quads, first + part);
  for (int q = first + static_cast<int>(threadIdx.x); q < end; q += static_cast<int>(blockDim.x)) {
    const int p = q * kQuad, y = p / W, x = p - y * W;
    T v[kQuad * C];  // NHWC order: pixel i's channel c at i * C + c
#pragma unroll
    for (int i = 0; i < kQuad; ++i)
#pragma unroll
      for (int c = 0; c < C; ++c) v[i * C + c] = table[c * 256 + crop_flip_pixel(image, H, W, c, y, x + i, t)];
#pragma unroll
    for (int w = 0; w < C; ++w) {
      Word word;
      T* lanes = reinterpret_cast<T*>(&word);
#pragma unroll
      for (int k = 0; k < kQuad; ++k) lanes[k] = Nhwc ? v[w * kQuad + k] : v[k * C + w];
      T* const at = Nhwc ? out + static_cast<int64_t>(p) * C + w * kQuad : out + static_cast<int64_t>(w) * plane + p;
      *reinterpret_cast<Word*>(at) = word;
    }
  }
}

// Whether gather_quads_kernel takes this batch: rows of whole quads and an aligned output (the samples'
// offsets are then multiples of a word, as plane % kQuad == 0).
bool gather_quads_fit(const GatherBatchArgs& a) {
  return a.width % kQuad == 0 && reinterpret_cast<uintptr_t>(a.out) % 16 == 0;
}

template <typename T, bool Nhwc>
void launch_gather_elements(const GatherBatchArgs& a, int64_t per_sample, cudaStream_t stream) {
  // About 16 outputs a thread: a 224x224 RGB sample in 37 parts, a 32x32 one in one.
  const int64_t parts = std::min<int64_t>(65535, (per_sample + 16 * kThreads - 1) / (16 * kThreads));
  const dim3 grid(static_cast<unsigned>(a.batch), static_cast<unsigned>(parts));
  gather_batch_kernel<T, Nhwc><<<grid, kThreads, 0, stream>>>(a);
}

template <typename T, bool Nhwc>
void launch_gather_quads(const GatherBatchArgs& a, cudaStream_t stream) {
  // About 4 quads a thread: a 224x224 sample in 13 parts.
  const int64_t quads = static_cast<int64_t>(a.height) * a.width / kQuad;
  const int64_t parts = std::min<int64_t>(65535, (quads + 4 * kThreads - 1) / (4 * kThreads));
  const dim3 grid(static_cast<unsigned>(a.batch), static_cast<unsigned>(parts));
  static_assert(kMaxAugmentChannels == 4, "one case per channel count that gather_batch accepts");
  switch (a.channels) {
    case 1: gather_quads_kernel<T, Nhwc, 1><<<grid, kThreads, 0, stream>>>(a); break;
    case 2: gather_quads_kernel<T, Nhwc, 2><<<grid, kThreads, 0, stream>>>(a); break;
    case 3: gather_quads_kernel<T, Nhwc, 3><<<grid, kThreads, 0, stream>>>(a); break;
    default: gather_quads_kernel<T, Nhwc, 4><<<grid, kThreads, 0, stream>>>(a); break;
  }
}

}  // namespace

void gather_batch(const GatherBatchArgs& a, cudaStream_t stream) {
  if (a.batch <= 0) return;
  if (a.channels < 1 || a.channels > kMaxAugmentChannels || a.height < 1 || a.width < 1)
    fatal("gather_batch: unsupported sample shape " + std::to_string(a.channels) + "x" + std::to_string(a.height) +
          "x" + std::to_string(a.width) + " (at most " + std::to_string(kMaxAugmentChannels) + " channels)");
  if (a.random_crop && (a.crop_padding < 0 || a.crop_padding > 65535))
    fatal("gather_batch: crop padding " + std::to_string(a.crop_padding) + " outside 0..65535");
  if (a.batch > 2147483647LL) fatal("gather_batch: batch too large");
  const int64_t per_sample = static_cast<int64_t>(a.channels) * a.height * a.width;
  if (per_sample > 2147483647LL) fatal("gather_batch: a sample of " + std::to_string(per_sample) + " values is too large");
  const bool nhwc = a.layout == Layout::NHWC && a.channels > 1;  // one channel: both layouts agree
  const bool quads = gather_quads_fit(a);
  dispatch_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (quads && nhwc) launch_gather_quads<T, true>(a, stream);
    else if (quads) launch_gather_quads<T, false>(a, stream);
    else if (nhwc) launch_gather_elements<T, true>(a, per_sample, stream);
    else launch_gather_elements<T, false>(a, per_sample, stream);
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
