// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a counter-based
// generator, so that the CPU and CUDA paths draw exactly the same numbers for the same (key, counter).
// Usable from host and device code.
#pragma once
#include <cstdint>

#include "core/host_device.h"

namespace sb {

struct Philox4 {
  uint32_t v[4];
};

SB_HOST_DEVICE void philox_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

// Ten rounds over a 128-bit counter with a 64-bit key.
SB_HOST_DEVICE Philox4 philox4x32(uint64_t counter_hi, uint64_t counter_lo, uint64_t key) {
  uint32_t c0 = static_cast<uint32_t>(counter_lo), c1 = static_cast<uint32_t>(counter_lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_hi), c3 = static_cast<uint32_t>(counter_hi >> 32);
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(0xD2511F53u, c0, hi0, lo0);
    philox_mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// A uniform float in [0, 1) from 24 random bits, exact on every platform.
SB_HOST_DEVICE float philox_uniform(uint32_t bits) { return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f); }

// The i-th uniform of a stream: element i uses word i%4 of block i/4.
SB_HOST_DEVICE float philox_uniform_at(uint64_t key, uint64_t stream, uint64_t i) {
  const Philox4 block = philox4x32(stream, i >> 2, key);
  return philox_uniform(block.v[i & 3]);
}

}  // namespace sb
