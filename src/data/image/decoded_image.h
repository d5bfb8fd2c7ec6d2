// A decoded image and the options and errors of the image decoders.
#pragma once
#include <cstdint>
#include <vector>

#include "core/error.h"

namespace sb {

// HWC, 8 bits per channel, RGB: pixel (x, y) is pixels[(y * width + x) * 3 + c].
struct DecodedImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;
  int scale_denominator = 1;  // the JPEG was decoded at 1/scale_denominator of its size (dct_scale.h)
  int x = 0, y = 0;  // where these pixels start in the image decoded at that scale: a crop's corner
};

// A region of an image in its full-size pixels; empty (width or height 0) means the whole image.
struct CropBox {
  int x = 0, y = 0, width = 0, height = 0;
  bool empty() const { return width <= 0 || height <= 0; }
};

// An image's size, read from its header alone.
struct ImageSize {
  int width = 0;
  int height = 0;
};

// PIL's default Image.MAX_IMAGE_PIXELS: above it an image is treated as a decompression bomb.
inline constexpr int64_t kDefaultMaxImagePixels = 178'956'970;

struct DecodeOptions {
  // Refuse an image whose header claims more pixels than this, before anything is allocated.
  int64_t max_pixels = kDefaultMaxImagePixels;
  // The smallest output the caller needs (e.g. its crop box scaled to the target size); 0 means full
  // size. A JPEG is then decoded at 1/2, 1/4 or 1/8 scale (in the DCT domain) wherever that scale still
  // gives at least min_width x min_height. Other formats always decode at full size.
  int min_width = 0;
  int min_height = 0;
  // Decode only this region (it must lie inside the image). With DCT scaling the result is the scaled
  // box [floor(x/d), ceil((x+width)/d)) x [floor(y/d), ceil((y+height)/d)); min_width/min_height then
  // apply to the box. A JPEG skips the rows above the box (jpeg_skip_scanlines: their IDCT, upsampling
  // and colour conversion), decodes only the iMCU columns that cover it (jpeg_crop_scanline) and stops
  // after its last row, so a file cut short below the box still decodes. A PNG is decoded whole, then
  // cropped.
  CropBox crop;
  // false lets a JPEG crop come out wider, by the iMCU columns the decoder decodes anyway (x says where
  // it starts): the rows then go straight into the output, without a copy each.
  bool exact_crop = true;
};

// A file that can't be decoded: its message names the cause (the libjpeg or libpng message, the format
// found, the size against the limit). Callers add the file's name.
class ImageDecodeError : public UserError {
 public:
  using UserError::UserError;
};

}  // namespace sb
