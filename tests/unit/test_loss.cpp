// nll_loss, cross_entropy_loss and count_correct: values against hand and naive computations, dL/dinput
// against finite differences, stability for large logits, and labels outside [0, C) as fatal errors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gradcheck.h"
#include "nn/cpu/activations.h"
#include "nn/cpu/loss.h"

namespace {

using sb::Shape;
using sb::Tensor;
using sb::testing::random_tensor;

std::vector<int32_t> random_labels(int64_t n, int64_t classes, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> u(0, static_cast<int32_t>(classes - 1));
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (auto& l : labels) l = u(rng);
  return labels;
}

Tensor<float> to_float(const Tensor<double>& x) {
  Tensor<float> f(x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) f[i] = static_cast<float>(x[i]);
  return f;
}

// Central differences of a scalar loss of x against the analytic gradient, for every element.
template <typename Loss>
void check_loss_gradient(Loss loss, Tensor<double> x, const std::vector<int32_t>& labels) {
  Tensor<double> grad;
  loss(x, labels.data(), grad);
  ASSERT_EQ(grad.shape(), x.shape());
  const Tensor<double> analytic = grad;
  const double h = 1e-6;
  Tensor<double> scratch;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = loss(x, labels.data(), scratch);
    x[i] = saved - h;
    const double down = loss(x, labels.data(), scratch);
    x[i] = saved;
    const double numeric = (up - down) / (2 * h);
    // Absolute tolerance: dL/dx is O(1/N), and the rounding error of a difference quotient is ~1e-10.
    EXPECT_NEAR(analytic[i], numeric, 1e-8) << "element " << i;
  }
}

TEST(NllLoss, HandComputedBatch) {
  Tensor<double> logp(Shape{2, 3});
  const double values[] = {-0.5, -1.5, -2.5, -3.0, -0.25, -1.75};
  for (int i = 0; i < 6; ++i) logp[i] = values[i];
  const int32_t labels[] = {2, 1};
  Tensor<double> grad;
  EXPECT_DOUBLE_EQ(sb::cpu::nll_loss(logp, labels, grad), (2.5 + 0.25) / 2);
  const double expected[] = {0, 0, -0.5, 0, -0.5, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(grad[i], expected[i]) << i;
}

TEST(NllLoss, GradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(41);
  for (const Shape& shape : {Shape{1, 1}, Shape{4, 10}, Shape{9, 3}}) {
    SCOPED_TRACE(shape.str());
    check_loss_gradient(sb::cpu::nll_loss<double>, random_tensor(shape, rng, -5.0, -0.1),
                        random_labels(shape[0], shape[1], rng));
  }
}

TEST(CrossEntropyLoss, MatchesNaiveFormula) {
  std::mt19937_64 rng(42);
  const Tensor<double> logits = random_tensor(Shape{6, 10}, rng, -4.0, 4.0);
  const std::vector<int32_t> labels = random_labels(6, 10, rng);
  double expected = 0;
  for (int64_t n = 0; n < 6; ++n) {
    double sum = 0;
    for (int64_t c = 0; c < 10; ++c) sum += std::exp(logits[n * 10 + c]);
    expected -= std::log(std::exp(logits[n * 10 + labels[n]]) / sum);
  }
  Tensor<double> grad;
  EXPECT_NEAR(sb::cpu::cross_entropy_loss(logits, labels.data(), grad), expected / 6, 1e-13);
}

TEST(CrossEntropyLoss, HandComputedRow) {
  Tensor<double> logits(Shape{1, 2});
  logits[0] = 0.0;
  logits[1] = std::log(3.0);  // softmax = {1/4, 3/4}
  const int32_t label = 0;
  Tensor<double> grad;
  EXPECT_NEAR(sb::cpu::cross_entropy_loss(logits, &label, grad), std::log(4.0), 1e-15);
  EXPECT_NEAR(grad[0], 0.25 - 1.0, 1e-15);
  EXPECT_NEAR(grad[1], 0.75, 1e-15);
}

// The fused loss equals LogSoftmax followed by NLL, in value and in gradient (chained by hand).
TEST(CrossEntropyLoss, EqualsLogSoftmaxThenNll) {
  std::mt19937_64 rng(43);
  const Tensor<double> logits = random_tensor(Shape{8, 5}, rng, -3.0, 3.0);
  const std::vector<int32_t> labels = random_labels(8, 5, rng);
  sb::cpu::LogSoftmax<double> log_softmax(sb::log_softmax("logp"));
  const Tensor<double>& logp = log_softmax.forward(logits, sb::cpu::Mode::Train);
  Tensor<double> dlogp, fused_grad;
  const double nll = sb::cpu::nll_loss(logp, labels.data(), dlogp);
  const double fused = sb::cpu::cross_entropy_loss(logits, labels.data(), fused_grad);
  EXPECT_NEAR(fused, nll, 1e-14);
  const Tensor<double>& chained = log_softmax.backward(dlogp);
  for (int64_t i = 0; i < logits.numel(); ++i) EXPECT_NEAR(fused_grad[i], chained[i], 1e-15);
}

TEST(CrossEntropyLoss, GradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(44);
  for (const Shape& shape : {Shape{1, 1}, Shape{1, 5}, Shape{4, 10}, Shape{7, 3}}) {
    SCOPED_TRACE(shape.str());
    check_loss_gradient(sb::cpu::cross_entropy_loss<double>, random_tensor(shape, rng, -6.0, 6.0),
                        random_labels(shape[0], shape[1], rng));
  }
}

// Shifting a row's logits by a constant leaves the loss unchanged; exp(1000) would overflow unshifted.
TEST(CrossEntropyLoss, StableForLargeLogits) {
  std::mt19937_64 rng(45);
  const Tensor<double> logits = random_tensor(Shape{4, 6}, rng, -3.0, 3.0);
  Tensor<double> shifted = logits;
  for (int64_t i = 0; i < logits.numel(); ++i) shifted[i] += (i / 6 % 2 ? -1000.0 : 1000.0);
  const std::vector<int32_t> labels = random_labels(4, 6, rng);
  Tensor<double> g0, g1;
  const double base = sb::cpu::cross_entropy_loss(logits, labels.data(), g0);
  const double big = sb::cpu::cross_entropy_loss(shifted, labels.data(), g1);
  ASSERT_TRUE(std::isfinite(big));
  EXPECT_NEAR(big, base, 1e-10);
  for (int64_t i = 0; i < logits.numel(); ++i) EXPECT_NEAR(g1[i], g0[i], 1e-12);
  Tensor<float> gf;
  const float big_f = sb::cpu::cross_entropy_loss(to_float(shifted), labels.data(), gf);
  EXPECT_NEAR(big_f, base, 1e-3);
}

// The losses are the layer's own loops, not BLAS: fixed tolerances hold on every CPU.
TEST(CrossEntropyLoss, FloatMatchesDouble) {
  std::mt19937_64 rng(46);
  const Tensor<double> logits = random_tensor(Shape{64, 10}, rng, -5.0, 5.0);
  const std::vector<int32_t> labels = random_labels(64, 10, rng);
  Tensor<double> gd;
  Tensor<float> gf;
  EXPECT_NEAR(sb::cpu::cross_entropy_loss(to_float(logits), labels.data(), gf),
              sb::cpu::cross_entropy_loss(logits, labels.data(), gd), 1e-5);
  for (int64_t i = 0; i < logits.numel(); ++i) EXPECT_NEAR(gf[i], gd[i], 1e-7);
}

TEST(CountCorrect, CountsArgMaxMatchesWithFirstMaximumOnTies) {
  Tensor<double> scores(Shape{4, 3});
  const double values[] = {0.1, 0.7, 0.2,   // arg-max 1
                           0.5, 0.5, 0.0,   // tie: 0 wins
                           -1, -2, -0.5,    // arg-max 2
                           3, 1, 2};        // arg-max 0
  for (int i = 0; i < 12; ++i) scores[i] = values[i];
  const int32_t labels[] = {1, 1, 2, 2};
  EXPECT_EQ(sb::cpu::count_correct(scores, labels), 2);
  const int32_t all_right[] = {1, 0, 2, 0};
  EXPECT_EQ(sb::cpu::count_correct(to_float(scores), all_right), 4);
}

using LossDeathTest = ::testing::Test;

TEST(LossDeathTest, LabelOutOfRangeIsFatal) {
  Tensor<double> scores(Shape{2, 3}, 0.5);
  Tensor<double> grad;
  const int32_t too_big[] = {0, 3};
  const int32_t negative[] = {-1, 0};
  EXPECT_EXIT(sb::cpu::nll_loss(scores, too_big, grad), ::testing::ExitedWithCode(3), "label 3 of row 1");
  EXPECT_EXIT(sb::cpu::cross_entropy_loss(scores, negative, grad), ::testing::ExitedWithCode(3), "label -1 of row 0");
  EXPECT_EXIT(sb::cpu::count_correct(scores, too_big), ::testing::ExitedWithCode(3), "outside the 3 classes");
}

}  // namespace
