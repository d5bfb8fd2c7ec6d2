// BatchNorm2d: PyTorch semantics (batch vs running statistics, the running update), finite-difference
// gradients in Train and Eval modes, float vs double.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/cpu/batchnorm2d.h"
#include "unit/gradcheck.h"

namespace sb {
namespace {

using testing::random_tensor;

// A BatchNorm2d over C channels with its own storage: params [gamma, beta], buffers [mean, var].
template <typename T>
struct BoundBatchNorm {
  int64_t channels;
  std::vector<T> params, grads, buffers;
  cpu::BatchNorm2d<T> layer;

  BoundBatchNorm(int64_t c, const std::vector<double>& p, const std::vector<double>& b)
      : channels(c), params(p.begin(), p.end()), grads(p.size(), T(0)), buffers(b.begin(), b.end()),
        layer(batchnorm2d("bn", c)) {
    layer.bind(params.data(), grads.data(), buffers.data());
  }
  T gamma(int64_t c) const { return params[static_cast<size_t>(c)]; }
  T beta(int64_t c) const { return params[static_cast<size_t>(channels + c)]; }
  T running_mean(int64_t c) const { return buffers[static_cast<size_t>(c)]; }
  T running_var(int64_t c) const { return buffers[static_cast<size_t>(channels + c)]; }
};

// gamma around 1, beta around 0, a running mean near 0 and a positive running variance: not the
// PyTorch initial values, so that every term of the formulas is exercised.
std::vector<double> random_params(int64_t channels, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> gamma(0.5, 1.5), beta(-0.5, 0.5);
  std::vector<double> p(static_cast<size_t>(2 * channels));
  for (int64_t c = 0; c < channels; ++c) {
    p[static_cast<size_t>(c)] = gamma(rng);
    p[static_cast<size_t>(channels + c)] = beta(rng);
  }
  return p;
}
std::vector<double> random_buffers(int64_t channels, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> mean(-0.3, 0.3), var(0.2, 2.0);
  std::vector<double> b(static_cast<size_t>(2 * channels));
  for (int64_t c = 0; c < channels; ++c) {
    b[static_cast<size_t>(c)] = mean(rng);
    b[static_cast<size_t>(channels + c)] = var(rng);
  }
  return b;
}

template <typename To, typename From>
Tensor<To> cast(const Tensor<From>& t) {
  Tensor<To> out(t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<To>(t[i]);
  return out;
}

// The values of channel c, gathered over the batch and the image.
std::vector<double> channel_values(const Tensor<double>& x, int64_t c) {
  const Shape& s = x.shape();
  std::vector<double> v;
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t p = 0; p < s[2] * s[3]; ++p) v.push_back(x[(n * s[1] + c) * s[2] * s[3] + p]);
  return v;
}

constexpr double kEps = 1e-5, kMomentum = 0.1;

TEST(BatchNorm2d, RunningStatisticsFollowPyTorchByHand) {
  // Two images, two channels, 1x2 pixels. Channel 0 holds 1, 2 (image 0) and 3, 4 (image 1): mean 2.5,
  // biased variance 1.25, unbiased 5/3. Channel 1 holds -1, 0.5, 2, 6.5: mean 2, biased variance 7.875,
  // unbiased 10.5.
  Tensor<double> x(Shape{2, 2, 1, 2});
  const double values[] = {1, 2, -1, 0.5, 3, 4, 2, 6.5};
  for (int i = 0; i < 8; ++i) x[i] = values[i];
  BoundBatchNorm<double> bn(2, {1.5, 0.5, 0.25, -1.0}, {0, 0, 1, 1});  // PyTorch's initial buffers

  const Tensor<double>& y = bn.layer.forward(x, cpu::Mode::Train);
  EXPECT_NEAR(bn.running_mean(0), 0.1 * 2.5, 1e-14);
  EXPECT_NEAR(bn.running_var(0), 0.9 + 0.1 * 5.0 / 3.0, 1e-14);
  EXPECT_NEAR(bn.running_mean(1), 0.1 * 2.0, 1e-14);
  EXPECT_NEAR(bn.running_var(1), 0.9 + 0.1 * 10.5, 1e-14);
  // Normalised with the biased variance: channel 0 value 1 -> 1.5 * (1 - 2.5) / sqrt(1.25 + eps) + 0.25.
  EXPECT_NEAR(y[0], 1.5 * (1 - 2.5) / std::sqrt(1.25 + kEps) + 0.25, 1e-14);
  EXPECT_NEAR(y[7], 0.5 * (6.5 - 2.0) / std::sqrt(7.875 + kEps) - 1.0, 1e-14);

  // A second step moves the running statistics another 10% of the way.
  bn.layer.forward(x, cpu::Mode::Train);
  EXPECT_NEAR(bn.running_mean(0), 0.9 * 0.25 + 0.1 * 2.5, 1e-14);
  EXPECT_NEAR(bn.running_var(1), 0.9 * (0.9 + 0.1 * 10.5) + 0.1 * 10.5, 1e-14);
}

TEST(BatchNorm2d, TrainModeNormalisesWithBatchStatistics) {
  std::mt19937_64 rng(51);
  const int64_t channels = 3;
  const auto params = random_params(channels, rng);
  const auto buffers = random_buffers(channels, rng);
  BoundBatchNorm<double> bn(channels, params, buffers);
  const Tensor<double> x = random_tensor(Shape{4, channels, 5, 3}, rng, -2.0, 3.0);
  const Tensor<double> y = bn.layer.forward(x, cpu::Mode::Train);
  for (int64_t c = 0; c < channels; ++c) {
    const auto xs = channel_values(x, c), ys = channel_values(y, c);
    double mean = 0, var = 0;
    for (double v : xs) mean += v / static_cast<double>(xs.size());
    for (double v : xs) var += (v - mean) * (v - mean) / static_cast<double>(xs.size());
    for (size_t i = 0; i < xs.size(); ++i)
      ASSERT_NEAR(ys[i], bn.gamma(c) * (xs[i] - mean) / std::sqrt(var + kEps) + bn.beta(c), 1e-12);
    const double unbiased = var * static_cast<double>(xs.size()) / static_cast<double>(xs.size() - 1);
    const size_t ci = static_cast<size_t>(c), vi = static_cast<size_t>(channels + c);
    EXPECT_NEAR(bn.running_mean(c), (1 - kMomentum) * buffers[ci] + kMomentum * mean, 1e-14);
    EXPECT_NEAR(bn.running_var(c), (1 - kMomentum) * buffers[vi] + kMomentum * unbiased, 1e-14);
  }
}

TEST(BatchNorm2d, EvalModeUsesRunningStatisticsAndLeavesThem) {
  std::mt19937_64 rng(52);
  const int64_t channels = 4;
  const auto params = random_params(channels, rng);
  const auto buffers = random_buffers(channels, rng);
  BoundBatchNorm<double> bn(channels, params, buffers);
  const Tensor<double> x = random_tensor(Shape{2, channels, 3, 4}, rng);
  const Tensor<double> y = bn.layer.forward(x, cpu::Mode::Eval);
  for (int64_t c = 0; c < channels; ++c) {
    const auto xs = channel_values(x, c), ys = channel_values(y, c);
    for (size_t i = 0; i < xs.size(); ++i)
      ASSERT_NEAR(ys[i], bn.gamma(c) * (xs[i] - bn.running_mean(c)) / std::sqrt(bn.running_var(c) + kEps) + bn.beta(c),
                  1e-12);
  }
  for (size_t i = 0; i < buffers.size(); ++i) EXPECT_EQ(bn.buffers[i], buffers[i]);
}

struct BnCase {
  const char* label;
  int64_t batch, channels, height, width;
};
std::ostream& operator<<(std::ostream& os, const BnCase& c) { return os << c.label; }

const BnCase kCases[] = {
    {"batch4_nonsquare", 4, 3, 5, 3},
    {"batch1_image", 1, 2, 4, 4},
    {"pixels1x1_batch6", 6, 3, 1, 1},
    {"batch2_wide", 2, 5, 2, 7},
};

class BatchNormCase : public ::testing::TestWithParam<BnCase> {};

TEST_P(BatchNormCase, TrainGradientsMatchFiniteDifferences) {
  const BnCase c = GetParam();
  std::mt19937_64 rng(53);
  BoundBatchNorm<double> bn(c.channels, random_params(c.channels, rng), random_buffers(c.channels, rng));
  const Tensor<double> x = random_tensor(Shape{c.batch, c.channels, c.height, c.width}, rng, -1.0, 2.0);
  testing::check_layer_gradients(bn.layer, x, bn.params.data(), bn.grads.data(),
                                 static_cast<int64_t>(bn.params.size()), rng, cpu::Mode::Train);
}

TEST_P(BatchNormCase, EvalGradientsMatchFiniteDifferences) {
  const BnCase c = GetParam();
  std::mt19937_64 rng(54);
  BoundBatchNorm<double> bn(c.channels, random_params(c.channels, rng), random_buffers(c.channels, rng));
  const Tensor<double> x = random_tensor(Shape{c.batch, c.channels, c.height, c.width}, rng);
  testing::check_layer_gradients(bn.layer, x, bn.params.data(), bn.grads.data(),
                                 static_cast<int64_t>(bn.params.size()), rng, cpu::Mode::Eval);
}

// BatchNorm2d sums in its own loops (in double, four fixed partial sums), not through BLAS: the order,
// and so what these fixed tolerances allow for, is the same on every CPU.
TEST_P(BatchNormCase, FloatAgreesWithDouble) {
  const BnCase c = GetParam();
  std::mt19937_64 rng(55);
  const auto params = random_params(c.channels, rng);
  const auto buffers = random_buffers(c.channels, rng);
  for (cpu::Mode mode : {cpu::Mode::Train, cpu::Mode::Eval}) {
    BoundBatchNorm<double> bn_d(c.channels, params, buffers);
    BoundBatchNorm<float> bn_f(c.channels, params, buffers);
    const Tensor<double> x = random_tensor(Shape{c.batch, c.channels, c.height, c.width}, rng);
    const Tensor<float> x_f = cast<float>(x);
    const Tensor<double>& y_d = bn_d.layer.forward(x, mode);
    const Tensor<float>& y_f = bn_f.layer.forward(x_f, mode);
    for (int64_t i = 0; i < y_d.numel(); ++i) ASSERT_NEAR(y_f[i], y_d[i], 1e-5) << "y at " << i;
    for (size_t i = 0; i < buffers.size(); ++i) ASSERT_NEAR(bn_f.buffers[i], bn_d.buffers[i], 1e-6);
    const Tensor<double> dy = random_tensor(y_d.shape(), rng);
    const Tensor<double>& dx_d = bn_d.layer.backward(dy);
    const Tensor<float>& dx_f = bn_f.layer.backward(cast<float>(dy));
    for (int64_t i = 0; i < dx_d.numel(); ++i) ASSERT_NEAR(dx_f[i], dx_d[i], 1e-4) << "dx at " << i;
    for (size_t i = 0; i < params.size(); ++i) ASSERT_NEAR(bn_f.grads[i], bn_d.grads[i], 1e-4) << "dparam " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Configurations, BatchNormCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<BnCase>& info) { return std::string(info.param.label); });

TEST(BatchNorm2d, FloatKeepsPrecisionForAnOffsetChannel) {
  // Activations far from zero (mean 1000, spread 1): a one-pass float variance would lose every digit.
  std::mt19937_64 rng(56);
  BoundBatchNorm<double> bn_d(2, {1, 1, 0, 0}, {0, 0, 1, 1});
  BoundBatchNorm<float> bn_f(2, {1, 1, 0, 0}, {0, 0, 1, 1});
  const Tensor<double> x = random_tensor(Shape{8, 2, 6, 6}, rng, 999.0, 1001.0);
  const Tensor<float> x_f = cast<float>(x);
  const Tensor<double>& y_d = bn_d.layer.forward(cast<double>(x_f), cpu::Mode::Train);  // same rounded input
  const Tensor<float>& y_f = bn_f.layer.forward(x_f, cpu::Mode::Train);
  for (int64_t i = 0; i < y_d.numel(); ++i) ASSERT_NEAR(y_f[i], y_d[i], 1e-5) << "y at " << i;
}

TEST(BatchNorm2d, BackwardOverwritesGradients) {
  std::mt19937_64 rng(57);
  BoundBatchNorm<double> bn(3, random_params(3, rng), random_buffers(3, rng));
  const Tensor<double> x = random_tensor(Shape{2, 3, 4, 4}, rng);
  const Tensor<double> dy = random_tensor(bn.layer.forward(x, cpu::Mode::Train).shape(), rng);
  bn.layer.backward(dy);
  const std::vector<double> first = bn.grads;
  std::fill(bn.grads.begin(), bn.grads.end(), std::numeric_limits<double>::quiet_NaN());
  bn.layer.backward(dy);
  for (size_t i = 0; i < first.size(); ++i) ASSERT_EQ(bn.grads[i], first[i]) << "dparam " << i;
}

TEST(BatchNorm2d, BatchSizeMayChangeBetweenCalls) {
  std::mt19937_64 rng(58);
  BoundBatchNorm<double> bn(2, random_params(2, rng), random_buffers(2, rng));
  for (int64_t batch : {5, 2, 3}) {
    const Tensor<double> x = random_tensor(Shape{batch, 2, 3, 3}, rng);
    const Tensor<double> y = bn.layer.forward(x, cpu::Mode::Train);
    ASSERT_EQ(y.shape(), x.shape());
    // Every channel comes out with mean beta whatever the batch size.
    for (int64_t c = 0; c < 2; ++c) {
      double mean = 0;
      for (double v : channel_values(y, c)) mean += v / static_cast<double>(batch * 9);
      EXPECT_NEAR(mean, bn.beta(c), 1e-12);
    }
    EXPECT_EQ(bn.layer.backward(random_tensor(x.shape(), rng)).shape(), x.shape());
  }
}

TEST(BatchNorm2d, BadShapesAreUserErrors) {
  std::mt19937_64 rng(59);
  BoundBatchNorm<double> bn(3, random_params(3, rng), random_buffers(3, rng));
  EXPECT_THROW(bn.layer.forward(random_tensor(Shape{2, 4, 3, 3}, rng), cpu::Mode::Train), UserError);
  EXPECT_THROW(bn.layer.forward(random_tensor(Shape{2, 3}, rng), cpu::Mode::Train), UserError);
  // One value per channel has no batch variance (PyTorch refuses it too), but Eval mode is fine.
  const Tensor<double> single = random_tensor(Shape{1, 3, 1, 1}, rng);
  EXPECT_THROW(bn.layer.forward(single, cpu::Mode::Train), UserError);
  EXPECT_NO_THROW(bn.layer.forward(single, cpu::Mode::Eval));
  const Tensor<double> x = random_tensor(Shape{2, 3, 3, 3}, rng);
  bn.layer.forward(x, cpu::Mode::Train);
  EXPECT_THROW(bn.layer.backward(random_tensor(Shape{2, 3, 3, 2}, rng)), UserError);
}

}  // namespace
}  // namespace sb
