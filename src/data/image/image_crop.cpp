#include "data/image/image_crop.h"

#include <cstring>
#include <string>

namespace sb {

void check_crop_box(const CropBox& box, int width, int height) {
  if (box.x < 0 || box.y < 0 || box.width > width - box.x || box.height > height - box.y) {
    throw ImageDecodeError("crop box " + std::to_string(box.width) + " x " + std::to_string(box.height) + " at (" +
                           std::to_string(box.x) + ", " + std::to_string(box.y) + ") lies outside the " +
                           std::to_string(width) + " x " + std::to_string(height) + " image");
  }
}

CropBox scaled_crop_box(const CropBox& box, int denominator) {
  CropBox out;
  out.x = box.x / denominator;
  out.y = box.y / denominator;
  out.width = (box.x + box.width + denominator - 1) / denominator - out.x;
  out.height = (box.y + box.height + denominator - 1) / denominator - out.y;
  return out;
}

void crop_decoded(DecodedImage& image, const CropBox& box) {
  const size_t row_bytes = static_cast<size_t>(box.width) * 3;
  for (int y = 0; y < box.height; ++y) {
    const uint8_t* from = image.pixels.data() + ((static_cast<size_t>(box.y + y) * image.width) + box.x) * 3;
    std::memmove(image.pixels.data() + static_cast<size_t>(y) * row_bytes, from, row_bytes);
  }
  image.width = box.width;
  image.height = box.height;
  image.x = box.x;
  image.y = box.y;
  image.pixels.resize(row_bytes * static_cast<size_t>(box.height));
}

}  // namespace sb
