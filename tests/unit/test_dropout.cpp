// Dropout: the mask definition, its statistics and determinism, scaling, eval/p == 0 identity and
// gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/philox.h"
#include "gradcheck.h"
#include "nn/cpu/dropout.h"

namespace {

using sb::Shape;
using sb::Tensor;
using sb::cpu::Mode;
using sb::testing::check_layer_gradients;
using sb::testing::random_tensor;

// Random values in [0.5, 1.5), so that a zero output can only mean a dropped element.
Tensor<double> nonzero_tensor(const Shape& shape, std::mt19937_64& rng) { return random_tensor(shape, rng, 0.5, 1.5); }

Tensor<float> to_float(const Tensor<double>& x) {
  Tensor<float> f(x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) f[i] = static_cast<float>(x[i]);
  return f;
}

// The test's own transcription of the documented key: splitmix64 finaliser of key ^ FNV-1a64(name).
uint64_t expected_mask_key(uint64_t stream_key, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  uint64_t z = stream_key ^ h;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<bool> kept(const Tensor<double>& y) {
  std::vector<bool> k(static_cast<size_t>(y.numel()));
  for (int64_t i = 0; i < y.numel(); ++i) k[static_cast<size_t>(i)] = y[i] != 0.0;
  return k;
}

// Runs one forward of a fresh layer named `name` with dropout p and returns which elements it kept.
std::vector<bool> mask_of(const std::string& name, double p, uint64_t key, uint64_t step, const Tensor<double>& x) {
  sb::cpu::Dropout<double> layer(sb::dropout(name, p));
  layer.set_random_stream(key, step);
  return kept(layer.forward(x, Mode::Train));
}

int64_t differences(const std::vector<bool>& a, const std::vector<bool>& b) {
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

TEST(DropoutMaskKey, IsTheDocumentedHash) {
  EXPECT_EQ(expected_mask_key(0, ""), sb::dropout_mask_key(0, ""));
  for (uint64_t key : {0ull, 1ull, 0xdeadbeefcafef00dull}) {
    for (const char* name : {"dropout", "fc.dropout1", "block3.drop"}) {
      EXPECT_EQ(sb::dropout_mask_key(key, name), expected_mask_key(key, name)) << key << " " << name;
    }
  }
  // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c (the published test vector), so the key for stream 0 is its
  // finalised value; this pins the hash against a transcription mistake shared by both copies.
  uint64_t z = 0xaf63dc4c8601ec8cull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  EXPECT_EQ(sb::dropout_mask_key(0, "a"), z ^ (z >> 31));
}

TEST(Dropout, KeepsExactlyTheElementsThePhiloxRuleKeeps) {
  std::mt19937_64 rng(31);
  const Tensor<double> x = nonzero_tensor(Shape{3, 5, 7, 2}, rng);  // 210 elements: not a multiple of 4
  for (double p : {0.1, 0.5, 0.7, 0.25}) {
    const uint64_t key = 1234, step = 56;
    const std::vector<bool> k = mask_of("net.drop", p, key, step, x);
    const uint64_t mask_key = sb::dropout_mask_key(key, "net.drop");
    for (int64_t i = 0; i < x.numel(); ++i) {
      const bool expected = static_cast<double>(sb::philox_uniform_at(mask_key, step, static_cast<uint64_t>(i))) >= p;
      EXPECT_EQ(k[static_cast<size_t>(i)], expected) << "p " << p << " i " << i;
      EXPECT_EQ(sb::dropout_keeps(mask_key, step, static_cast<uint64_t>(i), p), expected);
    }
  }
}

TEST(Dropout, DroppedFractionIsCloseToP) {
  std::mt19937_64 rng(32);
  const Tensor<double> x = nonzero_tensor(Shape{16, 4, 64, 64}, rng);  // 262,144 elements
  for (double p : {0.1, 0.25, 0.5, 0.8}) {
    const std::vector<bool> k = mask_of("drop", p, 99, 7, x);
    int64_t dropped = 0;
    for (bool kept_one : k) dropped += !kept_one;
    const double fraction = static_cast<double>(dropped) / static_cast<double>(x.numel());
    const double sigma = std::sqrt(p * (1 - p) / static_cast<double>(x.numel()));
    EXPECT_NEAR(fraction, p, 5 * sigma) << "p " << p;
  }
}

TEST(Dropout, SameKeyAndStepGiveTheSameMask) {
  std::mt19937_64 rng(33);
  const Tensor<double> x = nonzero_tensor(Shape{4, 1000}, rng);
  EXPECT_EQ(mask_of("drop", 0.5, 5, 9, x), mask_of("drop", 0.5, 5, 9, x));
  // The same layer, re-keyed identically, repeats itself too.
  sb::cpu::Dropout<double> layer(sb::dropout("drop", 0.5));
  layer.set_random_stream(5, 9);
  const std::vector<bool> first = kept(layer.forward(x, Mode::Train));
  layer.set_random_stream(5, 10);
  layer.forward(x, Mode::Train);
  layer.set_random_stream(5, 9);
  EXPECT_EQ(kept(layer.forward(x, Mode::Train)), first);
}

TEST(Dropout, StepKeyAndNameEachChangeTheMask) {
  std::mt19937_64 rng(34);
  const Tensor<double> x = nonzero_tensor(Shape{4, 1000}, rng);
  const std::vector<bool> base = mask_of("drop1", 0.5, 5, 9, x);
  // Two independent p = 0.5 masks differ in about half the elements.
  for (const auto& other : {mask_of("drop1", 0.5, 5, 10, x), mask_of("drop1", 0.5, 6, 9, x),
                            mask_of("drop2", 0.5, 5, 9, x)}) {
    const double fraction = static_cast<double>(differences(base, other)) / static_cast<double>(x.numel());
    EXPECT_NEAR(fraction, 0.5, 0.05);
  }
}

TEST(Dropout, KeptValuesAreScaledByOneOverOneMinusP) {
  std::mt19937_64 rng(35);
  const Tensor<double> x = nonzero_tensor(Shape{2, 3, 10, 10}, rng);
  const double p = 0.3;
  sb::cpu::Dropout<double> d(sb::dropout("drop", p));
  sb::cpu::Dropout<float> f(sb::dropout("drop", p));
  d.set_random_stream(17, 3);
  f.set_random_stream(17, 3);
  const Tensor<double>& yd = d.forward(x, Mode::Train);
  const Tensor<float> xf = to_float(x);
  const Tensor<float>& yf = f.forward(xf, Mode::Train);
  const float scale_f = static_cast<float>(1.0 / (1.0 - p));
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (yd[i] != 0.0) {
      EXPECT_EQ(yd[i], x[i] * (1.0 / (1.0 - p)));
    }
    // float and double share one mask.
    EXPECT_EQ(yf[i] != 0.0f, yd[i] != 0.0) << i;
    if (yf[i] != 0.0f) {
      EXPECT_EQ(yf[i], xf[i] * scale_f);
    }
  }
}

TEST(Dropout, BackwardAppliesTheSameMaskAndScale) {
  std::mt19937_64 rng(36);
  const Tensor<double> x = nonzero_tensor(Shape{5, 50}, rng);
  const double p = 0.4;
  sb::cpu::Dropout<double> layer(sb::dropout("drop", p));
  layer.set_random_stream(3, 4);
  const Tensor<double> y = layer.forward(x, Mode::Train);
  const Tensor<double> dy = random_tensor(y.shape(), rng);
  const Tensor<double>& dx = layer.backward(dy);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(dx[i], y[i] != 0.0 ? dy[i] * (1.0 / (1.0 - p)) : 0.0);
}

TEST(Dropout, EvalModeAndZeroPAreTheIdentity) {
  std::mt19937_64 rng(37);
  const Tensor<double> x = random_tensor(Shape{3, 4, 5, 6}, rng);
  const Tensor<double> dy = random_tensor(x.shape(), rng);
  sb::cpu::Dropout<double> eval(sb::dropout("drop", 0.5)), zero(sb::dropout("drop", 0.0));
  eval.set_random_stream(1, 2);
  zero.set_random_stream(1, 2);
  for (auto [layer, mode] : {std::pair{&eval, Mode::Eval}, std::pair{&zero, Mode::Train}}) {
    const Tensor<double>& y = layer->forward(x, mode);
    ASSERT_EQ(y.shape(), x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y[i], x[i]);
    const Tensor<double>& dx = layer->backward(dy);
    for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(dx[i], dy[i]);
  }
}

TEST(Dropout, POneDropsEverythingWithoutNaN) {
  std::mt19937_64 rng(38);
  const Tensor<double> x = random_tensor(Shape{2, 100}, rng);
  sb::cpu::Dropout<double> layer(sb::dropout("drop", 1.0));
  layer.set_random_stream(1, 1);
  const Tensor<double>& y = layer.forward(x, Mode::Train);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y[i], 0.0);
  const Tensor<double>& dx = layer.backward(random_tensor(x.shape(), rng));
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(dx[i], 0.0);
}

TEST(Dropout, ProbabilityOutsideZeroOneIsAUserError) {
  EXPECT_THROW({ sb::cpu::Dropout<float> layer(sb::dropout("drop", -0.1)); }, sb::UserError);
  EXPECT_THROW({ sb::cpu::Dropout<float> layer(sb::dropout("drop", 1.5)); }, sb::UserError);
}

TEST(Dropout, GradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(39);
  for (const Shape& shape : {Shape{1, 1}, Shape{2, 3, 4, 5}, Shape{7, 13}}) {
    for (double p : {0.2, 0.5}) {
      SCOPED_TRACE(shape.str() + " p " + std::to_string(p));
      sb::cpu::Dropout<double> layer(sb::dropout("drop", p));
      layer.set_random_stream(11, 22);
      check_layer_gradients(layer, random_tensor(shape, rng), nullptr, nullptr, 0, rng);
    }
  }
}

}  // namespace
