// JPEG decoding with libjpeg (libjpeg-turbo): baseline and progressive; grey, YCbCr, RGB, CMYK and YCCK
// (Adobe's inverted CMYK included) all come out RGB. DCT-domain downscaling and crop-only decoding per
// DecodeOptions.
#pragma once
#include <cstdint>
#include <span>

#include "data/image/decoded_image.h"

namespace sb {

// Throws ImageDecodeError with libjpeg's message on any error, on a truncated file ("Premature end of
// JPEG file") and on an image over options.max_pixels (checked from the header).
DecodedImage decode_jpeg(std::span<const uint8_t> bytes, const DecodeOptions& options = {});
// The same into `out`, whose pixel memory is reused: a worker that decodes image after image allocates
// (and the kernel zero-fills) no new pages for each.
void decode_jpeg_into(std::span<const uint8_t> bytes, const DecodeOptions& options, DecodedImage& out);

// The size from the header alone (no pixel limit applies); throws ImageDecodeError as decode_jpeg does.
ImageSize read_jpeg_size(std::span<const uint8_t> bytes);

}  // namespace sb
