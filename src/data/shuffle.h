// A platform-independent shuffle: Fisher-Yates driven by Philox, so that every rank, compiler and
// standard library produces the same permutation for the same key (std::shuffle and the
// distributions of <random> are implementation-defined).
#pragma once
#include <cstdint>
#include <vector>

namespace sb {

// counter_hi of the Philox draws of a shuffle ("SHUFFLE"); it can't collide with the augmentation
// counters, whose high word is (epoch << 32 | rank) with rank < 2^31.
inline constexpr uint64_t kShuffleStream = 0x53485546464C45ULL;

// The permutation of 0..n-1 for `key`. Start from the identity; for t = 0, 1, ..., n-2 let
// i = n-1-t, b = philox4x32(counter_hi = kShuffleStream, counter_lo = t, key),
// r = (uint64(b.v[1]) << 32) | b.v[0], j = r % (i+1), and swap p[i] with p[j]. (The modulo bias is
// below n / 2^64.)
std::vector<int64_t> philox_permutation(int64_t n, uint64_t key);

}  // namespace sb
