// Decoding an image file's bytes: the format is told from the content (image_format.h), never from the
// file's name, since real datasets hold PNGs named .JPEG.
#pragma once
#include <cstdint>
#include <span>

#include "data/image/decoded_image.h"

namespace sb {

// JPEG or PNG to RGB (jpeg_decoder.h, png_decoder.h). Anything else, empty input included, throws
// ImageDecodeError saying what the bytes look like.
DecodedImage decode_image(std::span<const uint8_t> bytes, const DecodeOptions& options = {});
// The same into `out`, reusing its pixel memory where the format's decoder can (JPEG).
void decode_image_into(std::span<const uint8_t> bytes, const DecodeOptions& options, DecodedImage& out);

// The size from the header alone, e.g. to choose a crop box before decoding; the same errors.
ImageSize read_image_size(std::span<const uint8_t> bytes);

}  // namespace sb
