// The decompression-bomb check: an image's claimed size against DecodeOptions::max_pixels, made from
// the header before any pixel memory is allocated.
#pragma once
#include <cstdint>

namespace sb {

// Throws ImageDecodeError naming width x height, their product and the limit when the image is empty
// or larger than max_pixels. `format` names the format in the message ("JPEG", "PNG").
void check_pixel_limit(const char* format, int64_t width, int64_t height, int64_t max_pixels);

}  // namespace sb
