// The CPU resampler of the ImageNet augmentation: a box of an image (src/maths/resized_crop.h) resampled to the
// output size with the antialiased bilinear filter defined there, separably (each needed source row
// filtered horizontally into floats, then the rows combined vertically), mirrored when the box says so.
// It runs in the decode workers for every training image, so its scratch is per thread and reused.
#pragma once
#include <cstdint>

#include "maths/resized_crop.h"

namespace sb {

// src: height x width x channels uint8 (HWC interleaved), channels 1 or 3 (convert grey to RGB before
// when the network wants RGB). out: out_height x out_width x channels. Throws std::invalid_argument naming
// the bad size or channel count.
void resample_crop(const uint8_t* src, int width, int height, int channels, const ResizedCropBox& box, int out_width,
                   int out_height, uint8_t* out);

}  // namespace sb
