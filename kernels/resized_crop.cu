// The resized-crop batch kernel (see resized_crop.h): one block per (sample, tile of output rows). The
// tile's row taps go to shared memory once; each thread takes an output column, computes its column taps
// once and walks the tile's rows, so a warp writes consecutive columns (coalesced under NCHW). Weights are
// recomputed per tap rather than stored: a few flops against the same count of multiply-adds, and no
// bound on the number of taps of a strong downscale. Taps are in the whole image's coordinates; only the
// pixel address subtracts the region's corner. Compiled with --fmad=false (cmake/CudaBackend.cmake),
// like the shared helpers' explicit rounding, so that the sums round as on the CPU.
#include "kernels/resized_crop.h"

#include "kernels/device_utils.cuh"
#include "maths/augment.h"
#include "maths/resized_crop.h"

namespace sb::kernels {
namespace {
using namespace detail;

constexpr int kRowsPerBlock = 8;
constexpr int kChannels = 3;

template <typename T, bool Nhwc>
__global__ void resized_crop_kernel(ResizedCropArgs a) {
  const int64_t n = blockIdx.x;
  const int row0 = static_cast<int>(blockIdx.y) * kRowsPerBlock;
  const ResizedCropSource s = a.sources[n];
  if (blockIdx.y == 0 && threadIdx.x == 0 && a.labels_out) a.labels_out[n] = s.label;
  const int rows = min(kRowsPerBlock, a.out_height - row0);
  const ResampleAxis ax = resample_axis(s.box.x, s.box.width, a.out_width, s.width);
  const ResampleAxis ay = resample_axis(s.box.y, s.box.height, a.out_height, s.height);
  __shared__ AxisTaps row_taps[kRowsPerBlock];
  if (static_cast<int>(threadIdx.x) < rows) row_taps[threadIdx.x] = resample_taps(ay, row0 + static_cast<int>(threadIdx.x));
  __syncthreads();

  const int H = a.out_height, W = a.out_width;
  T* out = static_cast<T*>(a.out) + n * kChannels * static_cast<int64_t>(H) * W;
  const int region_width = s.region.width > 0 ? s.region.width : s.width;
  const int64_t src_row = static_cast<int64_t>(region_width) * kChannels;
  for (int x = threadIdx.x; x < W; x += blockDim.x) {
    const AxisTaps tx = resample_taps(ax, x);
    const int xo = s.box.flip ? W - 1 - x : x;
    for (int r = 0; r < rows; ++r) {
      const AxisTaps ty = row_taps[r];
      float acc[kChannels] = {0, 0, 0};
      for (int j = 0; j < ty.count; ++j) {
        const float wy = resample_weight(ay, ty, j);
        const uint8_t* p = s.pixels + (ty.first + j - s.region.y) * src_row +
                           static_cast<int64_t>(tx.first - s.region.x) * kChannels;
        float h[kChannels] = {0, 0, 0};
        for (int i = 0; i < tx.count; ++i) {
          const float wx = resample_weight(ax, tx, i);
          for (int c = 0; c < kChannels; ++c)
            h[c] = resample_add(h[c], resample_mul(wx, static_cast<float>(p[i * kChannels + c])));
        }
        for (int c = 0; c < kChannels; ++c) acc[c] = resample_add(acc[c], resample_mul(wy, h[c]));
      }
      const int y = row0 + r;
      for (int c = 0; c < kChannels; ++c) {
        const int64_t at = Nhwc ? (static_cast<int64_t>(y) * W + xo) * kChannels + c
                                : (static_cast<int64_t>(c) * H + y) * W + xo;
        out[at] = from_float<T>(normalize_pixel<float>(resampled_byte(acc[c]), a.mean[c], a.std[c]));
      }
    }
  }
}

}  // namespace

void resized_crop_batch(const ResizedCropArgs& a, cudaStream_t stream) {
  if (a.batch <= 0) return;
  if (a.out_height < 1 || a.out_width < 1)
    fatal("resized_crop_batch: output size " + std::to_string(a.out_height) + "x" + std::to_string(a.out_width) +
          " must be at least 1x1");
  if (a.batch > 2147483647LL) fatal("resized_crop_batch: batch too large");
  const int64_t tiles = (a.out_height + kRowsPerBlock - 1) / kRowsPerBlock;
  if (tiles > 65535) fatal("resized_crop_batch: output height " + std::to_string(a.out_height) + " too large");
  const dim3 grid(static_cast<unsigned>(a.batch), static_cast<unsigned>(tiles));
  const bool nhwc = a.layout == Layout::NHWC;
  dispatch_dtype(a.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (nhwc)
      resized_crop_kernel<T, true><<<grid, kThreads, 0, stream>>>(a);
    else
      resized_crop_kernel<T, false><<<grid, kThreads, 0, stream>>>(a);
  });
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
