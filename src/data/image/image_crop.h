// Crop boxes of a decode (DecodeOptions::crop): their check against the image, their place in a
// DCT-scaled output, and the crop of a whole decoded image.
#pragma once
#include "data/image/decoded_image.h"

namespace sb {

// Throws ImageDecodeError when `box` does not lie inside a width x height image.
void check_crop_box(const CropBox& box, int width, int height);

// The box in an output decoded at 1/denominator: [floor(x/d), ceil((x+width)/d)) and the same for y.
CropBox scaled_crop_box(const CropBox& box, int denominator);

// Keeps only `box` (which lies inside the image) of a decoded image.
void crop_decoded(DecodedImage& image, const CropBox& box);

}  // namespace sb
