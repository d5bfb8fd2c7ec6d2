#include "data/pixel_values.h"

#include <cstring>

#include "maths/augment.h"

namespace sb {
namespace {

// The kernels' from_float<T>(value): fp32 as is, fp16 and bf16 rounded to nearest even.
uint32_t stored_bits(float value, DType dtype) {
  switch (dtype) {
    case DType::F16:
      return float_to_fp16_bits(value);
    case DType::BF16:
      return float_to_bf16_bits(value);
    case DType::F32:
      break;
  }
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

}  // namespace

PixelValues normalized_pixel_values(float mean, float std, DType dtype) {
  PixelValues values{};
  for (int raw = 0; raw < 256; ++raw)
    values[static_cast<size_t>(raw)] = stored_bits(normalize_pixel<float>(raw, mean, std), dtype);
  return values;
}

}  // namespace sb
