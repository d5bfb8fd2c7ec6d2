// Window arithmetic shared by the pooling kernels (pooling.cu) and the batch-norm passes that take the max
// pool after them (bn_pool.cu, bn_fused.cu). Windows lie over the padded image: input row y sits at y + pad.
#pragma once

#include <cstdint>

namespace sb::kernels::detail {

// The window positions (one byte each, ky * kernel + kx) of L neighbouring channels, loaded and stored as one
// aligned vector.
template <int L>
struct alignas(L) PositionLanes {
  uint8_t v[L];
};

// The output rows (or cols) whose windows cover padded input position i: [first, last], possibly empty.
template <typename I>
__device__ __forceinline__ void covering(I i, I k, I s, I out, I& first, I& last) {
  const I lo = i - k + 1;
  first = lo <= 0 ? 0 : (lo + s - 1) / s;
  last = i / s;
  if (last > out - 1) last = out - 1;
}

}  // namespace sb::kernels::detail
