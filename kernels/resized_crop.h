// The ImageNet-style batch on the GPU: ONE kernel resamples each sample's box of its decoded image to the
// output size (antialiased bilinear, the definition of src/maths/resized_crop.h, which the kernel
// calls), mirrors it when the box says so, normalises ((x/255 - mean[c]) / std[c], normalize_pixel<float>
// of src/maths/augment.h) and writes the compute dtype in NCHW or NHWC; it also copies the labels.
// Its raw bytes equal the CPU resampler's (src/data/image/resample.h): the kernel sums the taps in the
// same order with every product and sum rounded alike (no FMA contraction); fp16/bf16 outputs are the
// fp32 value rounded once, as NormalizedBatchWriter (src/data/image/normalize_batch.h) stores them.
// This interface depends on nothing above core/: the box is the plain ResizedCropBox below, which callers
// fill with sb::ResizedCropBox's values.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

// The fields of sb::ResizedCropBox: a region of the source image in pixels (may be fractional) and the
// mirroring of the output.
struct ResizedCropBox {
  float x = 0, y = 0, width = 0, height = 0;
  bool flip = false;
};

// The part of an image that a source's pixels hold (a region decode's output): its top-left pixel and its
// size. Empty (width 0) means the whole image.
struct PixelRegion {
  int x = 0, y = 0, width = 0, height = 0;
};

// The kernel computes the taps in the whole image's coordinates, as the CPU resampler does on the whole
// image, and subtracts the region's corner only to address a pixel: the arithmetic, and so every output
// byte, is the same whatever region holds the taps. The region must hold every tap the box's resampling
// reads (maths/resized_crop.h, resample_source_region): not checked on the device.
struct ResizedCropSource {
  const uint8_t* pixels = nullptr;  // the region's pixels: HWC RGB uint8, rows packed, device memory
  int width = 0, height = 0;        // the whole image's size, in which the box lies
  PixelRegion region;               // where `pixels` lie in the image
  ResizedCropBox box;               // width and height > 0: not checked on the device
  int32_t label = 0;
};

struct ResizedCropArgs {
  const ResizedCropSource* sources = nullptr;  // device array of `batch` sources
  int64_t batch = 0;
  int out_height = 0, out_width = 0;
  float mean[3] = {0, 0, 0};  // per channel, in [0, 1] pixel units
  float std[3] = {1, 1, 1};
  void* out = nullptr;  // [batch, 3, out_height, out_width] stored in `layout`, elements of `dtype`
  DType dtype = DType::F32;
  Layout layout = Layout::NCHW;
  int32_t* labels_out = nullptr;  // [batch]; nullptr skips the labels
};

void resized_crop_batch(const ResizedCropArgs& args, cudaStream_t stream);

}  // namespace sb::kernels
