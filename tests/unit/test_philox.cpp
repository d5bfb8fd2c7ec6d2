// Philox4x32-10 against the Random123 known answers, and the uniforms drawn from it.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

#include "core/philox.h"

namespace {

using Words4 = std::array<uint32_t, 4>;

// Random123 lists a counter as words {c0, c1, c2, c3} and a key as {k0, k1}. philox4x32 takes
// counter_lo = c1:c0, counter_hi = c3:c2 and key = k1:k0 (the first word is the low half).
Words4 philox_from_words(const Words4& ctr, const std::array<uint32_t, 2>& key) {
  const uint64_t counter_lo = (uint64_t{ctr[1]} << 32) | ctr[0];
  const uint64_t counter_hi = (uint64_t{ctr[3]} << 32) | ctr[2];
  const uint64_t k = (uint64_t{key[1]} << 32) | key[0];
  const sb::Philox4 r = sb::philox4x32(counter_hi, counter_lo, k);
  return {r.v[0], r.v[1], r.v[2], r.v[3]};
}

// An independent transcription of the paper's round function and key schedule, on word arrays.
Words4 reference_philox(Words4 c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    const uint64_t p0 = uint64_t{0xD2511F53u} * c[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57u} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
  return c;
}

TEST(Philox, KnownAnswerZeros) {
  EXPECT_EQ(philox_from_words({0, 0, 0, 0}, {0, 0}), (Words4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
}

TEST(Philox, KnownAnswerOnes) {
  const uint32_t f = 0xffffffffu;
  EXPECT_EQ(philox_from_words({f, f, f, f}, {f, f}), (Words4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
}

// The digits of pi make every word different, so this one also pins which word goes where.
TEST(Philox, KnownAnswerPiDigits) {
  EXPECT_EQ(philox_from_words({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (Words4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, MatchesIndependentReferenceOnRandomInputs) {
  std::mt19937_64 rng(101);
  for (int trial = 0; trial < 1000; ++trial) {
    const uint64_t a = rng(), b = rng(), key = rng();
    const Words4 ctr = {static_cast<uint32_t>(a), static_cast<uint32_t>(a >> 32), static_cast<uint32_t>(b),
                        static_cast<uint32_t>(b >> 32)};
    const std::array<uint32_t, 2> k = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
    const sb::Philox4 got = sb::philox4x32(b, a, key);
    EXPECT_EQ((Words4{got.v[0], got.v[1], got.v[2], got.v[3]}), reference_philox(ctr, k));
  }
}

TEST(Philox, UniformEdgesAreExact) {
  EXPECT_EQ(sb::philox_uniform(0u), 0.0f);
  EXPECT_EQ(sb::philox_uniform(0xffu), 0.0f);  // only the top 24 bits count
  EXPECT_EQ(sb::philox_uniform(0x100u), std::ldexp(1.0f, -24));
  EXPECT_EQ(sb::philox_uniform(0xffffffffu), 1.0f - std::ldexp(1.0f, -24));
  EXPECT_LT(sb::philox_uniform(0xffffffffu), 1.0f);
}

TEST(Philox, UniformAtUsesWordIModFourOfBlockIDivFour) {
  const uint64_t key = 0x1234567890abcdefull, stream = 77;
  for (uint64_t i = 0; i < 64; ++i) {
    const sb::Philox4 block = sb::philox4x32(stream, i / 4, key);
    EXPECT_EQ(sb::philox_uniform_at(key, stream, i), sb::philox_uniform(block.v[i % 4])) << "i = " << i;
  }
}

TEST(Philox, UniformRangeMeanAndVariance) {
  const int64_t n = 1 << 20;
  double sum = 0, sum_sq = 0;
  float lo = 1, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float u = sb::philox_uniform_at(42, 3, static_cast<uint64_t>(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
    sum_sq += double(u) * u;
  }
  const double mean = sum / n, var = sum_sq / n - mean * mean;
  // The standard error of the mean is sqrt(1/12/n) ~ 2.8e-4; allow 5 of them.
  EXPECT_NEAR(mean, 0.5, 1.5e-3);
  EXPECT_NEAR(var, 1.0 / 12.0, 1e-3);
  EXPECT_LT(lo, 1e-4);
  EXPECT_GT(hi, 1.0 - 1e-4);
}

TEST(Philox, StreamsAndKeysGiveDifferentNumbers) {
  int same_stream = 0, same_key = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    const float u = sb::philox_uniform_at(7, 0, i);
    same_stream += u == sb::philox_uniform_at(7, 1, i);
    same_key += u == sb::philox_uniform_at(8, 0, i);
  }
  EXPECT_LT(same_stream, 5);
  EXPECT_LT(same_key, 5);
}

}  // namespace
