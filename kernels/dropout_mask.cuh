// The dropout mask as device functions, shared by the dropout kernels (dropout.cu) and the fused batch-norm
// passes (bn_fused.cu), so that both draw exactly the CPU layer's mask (see dropout.h for its definition).
// Internal to kernels/ like device_utils.cuh.
#pragma once
#include <cstdint>

#include "core/philox.h"

namespace sb::kernels::detail {

struct DropoutMask {
  uint64_t key = 0, step = 0;
  const uint64_t* step_device = nullptr;  // overrides step when not null
  uint64_t first_group = 0;               // the group of the tensor's element 0: its mask index / 4
  uint32_t threshold = 0;                 // keep iff (bits >> 8) >= threshold
  float scale = 1.0f;                     // 1 / (1 - p), rounded once from double as the CPU layer does
};

// Checks p in [0, 1] and that first_element (the mask index of the tensor's element 0, nonzero for a
// slice of a batch) is a multiple of 4; `what` names the caller in the message.
DropoutMask make_dropout_mask(double p, uint64_t key, uint64_t step, const uint64_t* step_device, uint64_t first_element,
                              const char* what);

__device__ __forceinline__ uint64_t mask_step(const DropoutMask& d) { return d.step_device ? *d.step_device : d.step; }

// The Philox words of the 4 logical elements 4*group .. 4*group+3 (element i uses word i % 4), counted
// from the tensor's element 0.
__device__ __forceinline__ Philox4 mask_words(const DropoutMask& d, uint64_t step, uint64_t group) {
  return philox4x32(step, d.first_group + group, d.key);
}

__device__ __forceinline__ bool mask_keeps(uint32_t bits, uint32_t threshold) { return (bits >> 8) >= threshold; }

// Whether the element with logical NCHW index i is kept (one draw per element: for paths that cannot
// share a draw between 4 consecutive elements). The word is selected without a run-time array index,
// which would put the draw in local memory.
__device__ __forceinline__ bool mask_keeps_at(const DropoutMask& d, uint64_t step, uint64_t i) {
  const Philox4 r = mask_words(d, step, i >> 2);
  const uint32_t lo = (i & 1) ? r.v[1] : r.v[0], hi = (i & 1) ? r.v[3] : r.v[2];
  return mask_keeps((i & 2) ? hi : lo, d.threshold);
}

}  // namespace sb::kernels::detail
