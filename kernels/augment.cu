// The batch-assembly kernel (see augment.h): blockIdx.x is the sample, blockIdx.y one of the parts of its
// C*H*W outputs (one part for small images, enough for ImageNet-sized ones to fill the GPU). The threads
// draw the sample's crop and flip (one Philox block, the same for every thread, so no shared memory or
// barrier is needed) and walk their part's outputs in storage order, so the writes are coalesced in either
// layout; the uint8 reads are gathers within one image and mostly hit the caches.
#include "kernels/augment.h"

#include <algorithm>

#include "kernels/device_utils.cuh"
#include "maths/augment.h"

namespace sb::kernels {
namespace {
using namespace detail;

template <typename T, bool Nhwc>
__global__ void gather_batch_kernel(GatherBatchArgs a) {
  const int64_t j = blockIdx.x;
  const int64_t index = a.indices[j];
  if (threadIdx.x == 0 && blockIdx.y == 0 && a.labels_out) a.labels_out[j] = a.labels[index];
  CropFlip t;
  if (a.random_crop || a.horizontal_flip) {
    const int64_t epoch = a.epoch_device ? *a.epoch_device : a.key.epoch;
    const uint64_t first = a.first_position_device ? *a.first_position_device : a.first_position;
    t = draw_crop_flip(a.key.seed, epoch, a.key.rank, first + static_cast<uint64_t>(j), a.random_crop ? a.crop_padding : 0);
    if (!a.horizontal_flip) t.flip = false;
  }
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

}  // namespace

void gather_batch(const GatherBatchArgs& a, cudaStream_t stream) {
  if (a.batch <= 0) return;
  if (a.channels < 1 || a.channels > kMaxAugmentChannels || a.height < 1 || a.width < 1)
    fatal("gather_batch: unsupported sample shape " + std::to_string(a.channels) + "x" + std::to_string(a.height) +
          "x" + std::to_string(a.width) + " (at most " + std::to_string(kMaxAugmentChannels) + " channels)");
  if (a.random_crop && (a.crop_padding < 0 || a.crop_padding > 65535))
    fatal("gather_batch: crop padding " + std::to_string(a.crop_padding) + " outside 0..65535");
  if (a.batch > 2147483647LL) fatal("gather_batch: batch too large");
  const bool nhwc = a.layout == Layout::NHWC && a.channels > 1;  // one channel: both layouts agree
  // About 16 outputs a thread: a 224x224 RGB sample in 37 parts, a 32x32 one in one.
  const int64_t per_sample = static_cast<int64_t>(a.channels) * a.height * a.width;
  if (per_sample > 2147483647LL) fatal("gather_batch: a sample of " + std::to_string(per_sample) + " values is too large");
  const int64_t parts = std::min<int64_t>(65535, (per_sample + 16 * kThreads - 1) / (16 * kThreads));
  const dim3 grid(static_cast<unsigned>(a.batch), static_cast<unsigned>(parts));
  dispatch_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (nhwc)
      gather_batch_kernel<T, true><<<grid, kThreads, 0, stream>>>(a);
    else
      gather_batch_kernel<T, false><<<grid, kThreads, 0, stream>>>(a);
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
