// Linear: forward against direct loops, finite-difference gradients, float vs double. The comparisons
// allow each element the rounding bound of its own sums (unit/rounding_bound.h), which holds whatever
// order the BLAS kernels add in.
#include <gtest/gtest.h>

#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/cpu/linear.h"
#include "unit/gradcheck.h"
#include "unit/rounding_bound.h"

namespace sb {
namespace {

using testing::absolute;
using testing::random_tensor;
using testing::within_rounding;

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

// How many products each output sums (the bias counts as one): its rounding bound grows with them.
int64_t forward_terms(const LinearCase& c) { return c.in + (c.bias ? 1 : 0); }
int64_t input_gradient_terms(const LinearCase& c) { return c.out; }
int64_t param_gradient_terms(const LinearCase& c) { return c.batch; }

// Each gradient element's sum |a_j b_j|: the same backward pass over the operands' absolute values.
struct GradientMagnitudes {
  Tensor<double> dx;
  std::vector<double> dparams;
};
GradientMagnitudes gradient_magnitudes(const LinearCase& c, const Tensor<double>& x, const std::vector<double>& params,
                                       const Tensor<double>& dy) {
  BoundLinear<double> fc(spec_of(c), absolute(params));
  const Tensor<double> x_magnitude = absolute(x);  // the layer keeps a pointer to its input for backward
  fc.layer.forward(x_magnitude, cpu::Mode::Train);
  GradientMagnitudes m{fc.layer.backward(absolute(dy)), {}};
  m.dparams = fc.grads;
  return m;
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
  const Tensor<double> magnitude = naive_forward(c, absolute(x), absolute(params));
  EXPECT_TRUE(within_rounding(y.data(), expected.data(), magnitude.data(), y.numel(),
                              testing::double_against_double(forward_terms(c))));
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
  const Tensor<double> y_magnitude = naive_forward(c, absolute(x), absolute(params));
  EXPECT_TRUE(within_rounding(y_f.data(), y_d.data(), y_magnitude.data(), y_d.numel(),
                              testing::float_against_double(forward_terms(c)))) << "y";
  const Tensor<double> dy = random_tensor(y_d.shape(), rng);
  const Tensor<double>& dx_d = fc_d.layer.backward(dy);
  const Tensor<float>& dx_f = fc_f.layer.backward(cast<float>(dy));
  const GradientMagnitudes m = gradient_magnitudes(c, x, params, dy);
  EXPECT_TRUE(within_rounding(dx_f.data(), dx_d.data(), m.dx.data(), dx_d.numel(),
                              testing::float_against_double(input_gradient_terms(c)))) << "dx";
  EXPECT_TRUE(within_rounding(fc_f.grads.data(), fc_d.grads.data(), m.dparams.data(), static_cast<int64_t>(params.size()),
                              testing::float_against_double(param_gradient_terms(c)))) << "dparams";
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
    const Tensor<double> magnitude = naive_forward(c, absolute(x), absolute(params));
    EXPECT_TRUE(within_rounding(y.data(), expected.data(), magnitude.data(), y.numel(),
                                testing::double_against_double(forward_terms(c)))) << "batch " << batch;
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
