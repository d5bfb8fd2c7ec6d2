// ReLU, Flatten and LogSoftmax: forward against naive values, backward against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "gradcheck.h"
#include "nn/cpu/activations.h"

namespace {

using sb::Shape;
using sb::Tensor;
using sb::cpu::Mode;
using sb::testing::check_layer_gradients;
using sb::testing::random_tensor;

Tensor<float> to_float(const Tensor<double>& x) {
  Tensor<float> f(x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) f[i] = static_cast<float>(x[i]);
  return f;
}

// Random values kept at least 0.01 from zero, so that no finite-difference step crosses ReLU's kink.
Tensor<double> random_away_from_zero(const Shape& shape, std::mt19937_64& rng) {
  Tensor<double> x = random_tensor(shape, rng);
  for (int64_t i = 0; i < x.numel(); ++i)
    if (std::fabs(x[i]) < 0.01) x[i] = x[i] < 0 ? -0.01 - x[i] : 0.01 + x[i];
  return x;
}

TEST(ReLU, ForwardIsMaxWithZero) {
  std::mt19937_64 rng(1);
  sb::cpu::ReLU<double> layer(sb::relu("relu"));
  const Tensor<double> x = random_tensor(Shape{2, 3, 4, 5}, rng);
  const Tensor<double>& y = layer.forward(x, Mode::Train);
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0.0);
}

TEST(ReLU, BackwardPassesGradientOnlyWherePositive) {
  std::mt19937_64 rng(2);
  sb::cpu::ReLU<double> layer(sb::relu("relu"));
  const Tensor<double> x = random_away_from_zero(Shape{3, 7}, rng);
  layer.forward(x, Mode::Train);
  const Tensor<double> dy = random_tensor(x.shape(), rng);
  const Tensor<double>& dx = layer.backward(dy);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(dx[i], x[i] > 0 ? dy[i] : 0.0);
}

TEST(ReLU, GradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(3);
  for (const Shape& shape : {Shape{1, 1, 1, 1}, Shape{2, 3, 4, 5}, Shape{7, 10}, Shape{4, 2, 9, 3}}) {
    SCOPED_TRACE(shape.str());
    sb::cpu::ReLU<double> layer(sb::relu("relu"));
    check_layer_gradients(layer, random_away_from_zero(shape, rng), nullptr, nullptr, 0, rng);
  }
}

TEST(ReLU, FloatMatchesDouble) {
  std::mt19937_64 rng(4);
  const Tensor<double> x = random_tensor(Shape{2, 4, 3, 3}, rng);
  sb::cpu::ReLU<double> d(sb::relu("relu"));
  sb::cpu::ReLU<float> f(sb::relu("relu"));
  const Tensor<double>& yd = d.forward(x, Mode::Train);
  const Tensor<float>& yf = f.forward(to_float(x), Mode::Train);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(yf[i], static_cast<float>(yd[i]));
}

TEST(Flatten, ForwardKeepsOrderAndBackwardRestoresShape) {
  std::mt19937_64 rng(5);
  sb::cpu::Flatten<double> layer(sb::flatten("flat"));
  const Tensor<double> x = random_tensor(Shape{3, 4, 5, 6}, rng);
  const Tensor<double>& y = layer.forward(x, Mode::Train);
  ASSERT_EQ(y.shape(), (Shape{3, 120}));
  ASSERT_EQ(y.shape(), sb::output_shape(sb::flatten("flat"), x.shape()));
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y[i], x[i]);
  const Tensor<double> dy = random_tensor(y.shape(), rng);
  const Tensor<double>& dx = layer.backward(dy);
  ASSERT_EQ(dx.shape(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(dx[i], dy[i]);
}

TEST(Flatten, GradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(6);
  for (const Shape& shape : {Shape{1, 1, 1, 1}, Shape{2, 3, 4, 5}, Shape{5, 8}, Shape{2, 6, 3}}) {
    SCOPED_TRACE(shape.str());
    sb::cpu::Flatten<double> layer(sb::flatten("flat"));
    check_layer_gradients(layer, random_tensor(shape, rng), nullptr, nullptr, 0, rng);
  }
}

TEST(LogSoftmax, ForwardMatchesNaiveFormula) {
  std::mt19937_64 rng(7);
  sb::cpu::LogSoftmax<double> layer(sb::log_softmax("logp"));
  const Tensor<double> x = random_tensor(Shape{5, 10}, rng, -4.0, 4.0);
  const Tensor<double>& y = layer.forward(x, Mode::Train);
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t r = 0; r < 5; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < 10; ++c) sum += std::exp(x[r * 10 + c]);
    double prob_total = 0;
    for (int64_t c = 0; c < 10; ++c) {
      EXPECT_NEAR(y[r * 10 + c], std::log(std::exp(x[r * 10 + c]) / sum), 1e-12);
      prob_total += std::exp(y[r * 10 + c]);
    }
    EXPECT_NEAR(prob_total, 1.0, 1e-12);
  }
}

TEST(LogSoftmax, HandComputedRow) {
  sb::cpu::LogSoftmax<double> layer(sb::log_softmax("logp"));
  Tensor<double> x(Shape{1, 3});
  x[0] = 1.0; x[1] = 2.0; x[2] = 3.0;
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));  // 3.4076059644443806
  const Tensor<double>& y = layer.forward(x, Mode::Eval);
  EXPECT_NEAR(lse, 3.4076059644443806, 1e-15);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(y[c], x[c] - lse, 1e-15);
}

// exp(1000) overflows; the max-shifted form must give the same answer as for the shifted logits.
TEST(LogSoftmax, StableForLargeLogits) {
  std::mt19937_64 rng(8);
  const Tensor<double> x = random_tensor(Shape{4, 6}, rng, -3.0, 3.0);
  Tensor<double> shifted = x;
  for (int64_t i = 0; i < x.numel(); ++i) shifted[i] += (i / 6 % 2 ? -1000.0 : 1000.0);
  sb::cpu::LogSoftmax<double> a(sb::log_softmax("logp")), b(sb::log_softmax("logp"));
  const Tensor<double>& ya = a.forward(x, Mode::Train);
  const Tensor<double>& yb = b.forward(shifted, Mode::Train);
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_TRUE(std::isfinite(yb[i]));
    EXPECT_NEAR(yb[i], ya[i], 1e-10);
  }
  sb::cpu::LogSoftmax<float> f(sb::log_softmax("logp"));
  const Tensor<float>& yf = f.forward(to_float(shifted), Mode::Train);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_NEAR(yf[i], ya[i], 1e-3);
}

TEST(LogSoftmax, GradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(9);
  for (const Shape& shape : {Shape{1, 1}, Shape{1, 5}, Shape{4, 10}, Shape{16, 7}, Shape{3, 2}}) {
    SCOPED_TRACE(shape.str());
    sb::cpu::LogSoftmax<double> layer(sb::log_softmax("logp"));
    check_layer_gradients(layer, random_tensor(shape, rng, -5.0, 5.0), nullptr, nullptr, 0, rng);
  }
}

// Activations and log-softmax are the layers' own loops, not BLAS: fixed tolerances hold on every CPU.
TEST(LogSoftmax, FloatMatchesDouble) {
  std::mt19937_64 rng(10);
  const Tensor<double> x = random_tensor(Shape{8, 10}, rng, -6.0, 6.0);
  const Tensor<double> dy = random_tensor(x.shape(), rng);
  sb::cpu::LogSoftmax<double> d(sb::log_softmax("logp"));
  sb::cpu::LogSoftmax<float> f(sb::log_softmax("logp"));
  const Tensor<double>& yd = d.forward(x, Mode::Train);
  const Tensor<float>& yf = f.forward(to_float(x), Mode::Train);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_NEAR(yf[i], yd[i], 1e-5);
  const Tensor<double>& dxd = d.backward(dy);
  const Tensor<float>& dxf = f.backward(to_float(dy));
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_NEAR(dxf[i], dxd[i], 1e-5);
}

}  // namespace
