// Linear: forward against direct loops, finite-difference gradients, float vs double.
#include <gtest/gtest.h>

#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/cpu/linear.h"
#include "unit/gradcheck.h"

namespace sb {
namespace {

using testing::random_tensor;

struct LinearCase {
  std::string label;
  int64_t batch, in, out;
  bool bias;
};

std::ostream& operator<<(std::ostream& os, const LinearCase& c) { return os << c.label; }

LayerSpec spec_of(const LinearCase& c) { return linear("fc", c.in, c.out, c.bias); }

// A Linear with its own parameter and gradient storage.
template <typename T>
struct BoundLinear {
  std::vector<T> params, grads;
  cpu::Linear<T> layer;

  BoundLinear(const LayerSpec& s, const std::vector<double>& p)
      : params(p.begin(), p.end()), grads(p.size(), T(0)), layer(s) {
    layer.bind(params.data(), grads.data(), nullptr);
  }
};

std::vector<double> random_params(const LayerSpec& spec, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  std::vector<double> p(static_cast<size_t>(count_elements(layer_params(spec))));
  for (auto& v : p) v = u(rng);
  return p;
}

template <typename To, typename From>
Tensor<To> cast(const Tensor<From>& t) {
  Tensor<To> out(t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = static_cast<To>(t[i]);
  return out;
}

// y[n][o] = b[o] + sum_i x[n][i] * W[o][i]
Tensor<double> naive_forward(const LinearCase& c, const Tensor<double>& x, const std::vector<double>& params) {
  Tensor<double> y(Shape{c.batch, c.out});
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t o = 0; o < c.out; ++o) {
      double sum = c.bias ? params[static_cast<size_t>(c.out * c.in + o)] : 0.0;
      for (int64_t i = 0; i < c.in; ++i) sum += x[n * c.in + i] * params[static_cast<size_t>(o * c.in + i)];
      y[n * c.out + o] = sum;
    }
  return y;
}

const std::vector<LinearCase> kCases = {
    {"bias_batch4", 4, 7, 3, true},
    {"nobias_batch4", 4, 7, 3, false},
    {"batch1", 1, 5, 6, true},
    {"wide", 3, 40, 10, true},
    {"single_output", 6, 9, 1, false},
};

class LinearCaseTest : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearCaseTest, ForwardMatchesDirectLoops) {
  const LinearCase c = GetParam();
  std::mt19937_64 rng(31);
  const auto params = random_params(spec_of(c), rng);
  const Tensor<double> x = random_tensor(Shape{c.batch, c.in}, rng);
  BoundLinear<double> fc(spec_of(c), params);
  const Tensor<double>& y = fc.layer.forward(x, cpu::Mode::Train);
  const Tensor<double> expected = naive_forward(c, x, params);
  ASSERT_EQ(y.shape(), expected.shape());
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-12) << "at " << i;
}

TEST_P(LinearCaseTest, GradientsMatchFiniteDifferences) {
  const LinearCase c = GetParam();
  std::mt19937_64 rng(32);
  BoundLinear<double> fc(spec_of(c), random_params(spec_of(c), rng));
  const Tensor<double> x = random_tensor(Shape{c.batch, c.in}, rng);
  testing::check_layer_gradients(fc.layer, x, fc.params.data(), fc.grads.data(),
                                 static_cast<int64_t>(fc.params.size()), rng);
}

TEST_P(LinearCaseTest, FloatAgreesWithDouble) {
  const LinearCase c = GetParam();
  std::mt19937_64 rng(33);
  const auto params = random_params(spec_of(c), rng);
  const Tensor<double> x = random_tensor(Shape{c.batch, c.in}, rng);
  BoundLinear<double> fc_d(spec_of(c), params);
  BoundLinear<float> fc_f(spec_of(c), params);
  const Tensor<double>& y_d = fc_d.layer.forward(x, cpu::Mode::Train);
  const Tensor<float> x_f = cast<float>(x);
  const Tensor<float>& y_f = fc_f.layer.forward(x_f, cpu::Mode::Train);
  for (int64_t i = 0; i < y_d.numel(); ++i) ASSERT_NEAR(y_f[i], y_d[i], 1e-5) << "y at " << i;
  const Tensor<double> dy = random_tensor(y_d.shape(), rng);
  const Tensor<double>& dx_d = fc_d.layer.backward(dy);
  const Tensor<float>& dx_f = fc_f.layer.backward(cast<float>(dy));
  for (int64_t i = 0; i < dx_d.numel(); ++i) ASSERT_NEAR(dx_f[i], dx_d[i], 1e-5) << "dx at " << i;
  for (size_t i = 0; i < params.size(); ++i) ASSERT_NEAR(fc_f.grads[i], fc_d.grads[i], 1e-5) << "dparam " << i;
}

INSTANTIATE_TEST_SUITE_P(Configurations, LinearCaseTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<LinearCase>& info) { return info.param.label; });

TEST(Linear, BackwardOverwritesGradients) {
  const LinearCase c = kCases[0];
  std::mt19937_64 rng(41);
  BoundLinear<double> fc(spec_of(c), random_params(spec_of(c), rng));
  const Tensor<double> x = random_tensor(Shape{c.batch, c.in}, rng);
  const Tensor<double> dy = random_tensor(fc.layer.forward(x, cpu::Mode::Train).shape(), rng);
  fc.layer.backward(dy);
  const std::vector<double> first = fc.grads;
  std::fill(fc.grads.begin(), fc.grads.end(), std::numeric_limits<double>::quiet_NaN());
  fc.layer.backward(dy);
  for (size_t i = 0; i < first.size(); ++i) ASSERT_EQ(fc.grads[i], first[i]) << "dparam " << i;
}

TEST(Linear, BatchSizeMayChangeBetweenCalls) {
  LinearCase c = kCases[0];
  std::mt19937_64 rng(42);
  const auto params = random_params(spec_of(c), rng);
  BoundLinear<double> fc(spec_of(c), params);
  for (int64_t batch : {8, 2, 5}) {
    c.batch = batch;
    const Tensor<double> x = random_tensor(Shape{c.batch, c.in}, rng);
    const Tensor<double>& y = fc.layer.forward(x, cpu::Mode::Eval);
    const Tensor<double> expected = naive_forward(c, x, params);
    ASSERT_EQ(y.shape(), expected.shape());
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y[i], expected[i], 1e-12);
    EXPECT_EQ(fc.layer.backward(random_tensor(y.shape(), rng)).shape(), x.shape());
  }
}

TEST(Linear, WrongShapesAreUserErrors) {
  const LinearCase c = kCases[0];
  std::mt19937_64 rng(43);
  BoundLinear<double> fc(spec_of(c), random_params(spec_of(c), rng));
  EXPECT_THROW(fc.layer.forward(random_tensor(Shape{c.batch, c.in + 1}, rng), cpu::Mode::Train), UserError);
  EXPECT_THROW(fc.layer.forward(random_tensor(Shape{c.batch, c.in, 1, 1}, rng), cpu::Mode::Train), UserError);
  const Tensor<double> x = random_tensor(Shape{c.batch, c.in}, rng);
  fc.layer.forward(x, cpu::Mode::Train);
  EXPECT_THROW(fc.layer.backward(random_tensor(Shape{c.batch + 1, c.out}, rng)), UserError);
}

}  // namespace
}  // namespace sb
