// PNG decoding with libpng: 8-bit (and 1/2/4-bit grey) grey, grey+alpha, RGB, RGBA and palette images,
// interlaced or not, all come out RGB. Alpha is dropped without compositing (like PIL's convert('RGB')):
// a transparent pixel keeps its stored colour. 16-bit images are refused.
#pragma once
#include <cstdint>
#include <span>

#include "data/image/decoded_image.h"

namespace sb {

// Throws ImageDecodeError with libpng's message on any error (a bad CRC, a truncated file), on 16-bit
// images and on an image over options.max_pixels (checked from IHDR).
DecodedImage decode_png(std::span<const uint8_t> bytes, const DecodeOptions& options = {});

// The size from IHDR alone (no pixel limit applies); throws ImageDecodeError as decode_png does.
ImageSize read_png_size(std::span<const uint8_t> bytes);

}  // namespace sb
