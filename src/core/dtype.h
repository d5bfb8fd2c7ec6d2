// Element types and memory layouts, and the host-side conversions between fp32, fp16 and bf16.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace sb {

enum class DType { F32, F16, BF16 };
enum class Layout { NCHW, NHWC };

inline size_t dtype_size(DType t) { return t == DType::F32 ? 4 : 2; }
inline const char* dtype_name(DType t) { return t == DType::F32 ? "fp32" : t == DType::F16 ? "fp16" : "bf16"; }
inline const char* layout_name(Layout l) { return l == Layout::NCHW ? "NCHW" : "NHWC"; }

// bf16 is the top half of an fp32, rounded to nearest even (NaN stays NaN).
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_bits_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE binary16 with round to nearest even, subnormals and infinities.
uint16_t float_to_fp16_bits(float f);
float fp16_bits_to_float(uint16_t h);

}  // namespace sb
