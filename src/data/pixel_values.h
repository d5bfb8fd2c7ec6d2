// The stored bits of a normalised pixel: a channel's value depends only on its raw byte, so its 256
// possible values are computed once, with the CUDA batch kernels' arithmetic (normalize_pixel<float> of
// maths/augment.h) and rounding (fp16/bf16 rounded once, to nearest even).
#pragma once
#include <array>
#include <cstdint>

#include "core/dtype.h"

namespace sb {

// values[raw]: fp32 bits, or fp16/bf16 bits in the low half.
using PixelValues = std::array<uint32_t, 256>;

PixelValues normalized_pixel_values(float mean, float std, DType dtype);

}  // namespace sb
