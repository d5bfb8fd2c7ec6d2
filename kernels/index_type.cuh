// The index type of the kernels that compute offsets per element (small_conv.cu, pool_dropout.cu,
// bn_fused.cu): 32-bit index arithmetic where every offset of the launch fits (a 64-bit division costs
// several times a 32-bit one), else 64-bit.
// Internal to kernels/ like device_utils.cuh.
#pragma once
#include <cstdint>

#include "kernels/device_utils.cuh"

namespace sb::kernels::detail {

// Calls f(TypeTag<I>{}) with I = int32_t when every offset is below `elements` and that bound leaves the
// loops' strides room below 2^31, else with I = int64_t.
template <typename F>
void dispatch_index(int64_t elements, F&& f) {
  if (elements < (int64_t{1} << 30)) f(TypeTag<int32_t>{});
  else f(TypeTag<int64_t>{});
}

// log2 of a power of two (the channel counts these kernels take).
inline int log2_of_power_of_two(int64_t v) {
  int shift = 0;
  while ((int64_t{1} << shift) < v) ++shift;
  return shift;
}

}  // namespace sb::kernels::detail
