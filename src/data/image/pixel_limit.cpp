#include "data/image/pixel_limit.h"

#include <string>

#include "data/image/decoded_image.h"

namespace sb {

void check_pixel_limit(const char* format, int64_t width, int64_t height, int64_t max_pixels) {
  const std::string size = std::to_string(width) + " x " + std::to_string(height);
  if (width <= 0 || height <= 0) throw ImageDecodeError(std::string(format) + " header claims an empty image (" + size + ")");
  const int64_t pixels = width * height;  // both below 2^32: no overflow
  if (pixels > max_pixels) {
    throw ImageDecodeError(std::string(format) + " header claims " + size + " = " + std::to_string(pixels) +
                           " pixels, over the limit of " + std::to_string(max_pixels) +
                           " (a decompression bomb, or raise the pixel limit if the image is genuine)");
  }
}

}  // namespace sb
