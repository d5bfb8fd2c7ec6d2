// Synthetic datasets of any image shape: uniformly random pixels and labels drawn with Philox from
// a fixed seed, so every rank and every run sees the same data without any file. For throughput
// studies (no signal to learn beyond memorisation).
#pragma once
#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace sb {

struct SyntheticShape {
  int channels = 3;
  int height = 32;
  int width = 32;
  int num_classes = 100;
};

inline constexpr uint64_t kSyntheticSeed = 0x5CA1EBE7C0FFEEULL;
// Per-split limit (8 GiB of uint8 pixels), checked before allocating.
inline constexpr uint64_t kMaxSyntheticBytes = uint64_t{1} << 33;

// Parses "CxHxW:classes", e.g. "3x32x32:100"; a malformed or out-of-range value is a UserError that
// quotes it. Limits: 1 <= C <= 4096, 1 <= H, W <= 65536, 2 <= classes <= 1000000.
SyntheticShape parse_synthetic_shape(const std::string& text);
std::string to_string(const SyntheticShape& shape);  // "3x32x32:100"

// `count` samples; split 0 is training, 1 is test (they draw from different Philox streams).
// Pixel byte k of a split is byte k%16 (little-endian within each word) of
// philox4x32(counter_hi = kSyntheticTag + 2*split, counter_lo = k/16, key = seed); label i is
// philox4x32(kSyntheticTag + 2*split + 1, i, seed).v[0] % classes. Mean 0.5 and std 0.2898 per
// channel (those of uniform bytes).
Dataset make_synthetic_split(const SyntheticShape& shape, int64_t count, int split, uint64_t seed = kSyntheticSeed);
TrainTest make_synthetic(const SyntheticShape& shape, int64_t train_count, int64_t test_count,
                         uint64_t seed = kSyntheticSeed);

}  // namespace sb
