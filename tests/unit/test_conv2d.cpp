// Conv2d: forward and backward against direct loops, finite-difference gradients, float vs double. The
// comparisons allow each element the rounding bound of its own sums (unit/rounding_bound.h), which holds
// whatever order the BLAS kernels add in.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/cpu/conv2d.h"
#include "unit/gradcheck.h"
#include "unit/rounding_bound.h"

namespace sb {
namespace {

using testing::absolute;
using testing::random_tensor;
using testing::within_rounding;

struct ConvCase {
  std::string label;
  int64_t batch, in, out, height, width, kernel, stride, pad;
  bool bias;
};

std::ostream& operator<<(std::ostream& os, const ConvCase& c) { return os << c.label; }

LayerSpec spec_of(const ConvCase& c) { return conv2d("conv", c.in, c.out, c.kernel, c.stride, c.pad, c.bias); }
Shape input_shape(const ConvCase& c) { return Shape{c.batch, c.in, c.height, c.width}; }

// How many products each output sums (the bias counts as one): its rounding bound grows with them.
int64_t forward_terms(const ConvCase& c) { return c.in * c.kernel * c.kernel + (c.bias ? 1 : 0); }
int64_t input_gradient_terms(const ConvCase& c) { return c.out * c.kernel * c.kernel; }
int64_t param_gradient_terms(const ConvCase& c) {
  const int64_t oh_n = (c.height + 2 * c.pad - c.kernel) / c.stride + 1;
  const int64_t ow_n = (c.width + 2 * c.pad - c.kernel) / c.stride + 1;
  return c.batch * oh_n * ow_n;
}

// A Conv2d with its own parameter and gradient storage, parameters drawn at random.
template <typename T>
struct BoundConv {
  LayerSpec spec;
  std::vector<T> params, grads;
  cpu::Conv2d<T> layer;

  BoundConv(const LayerSpec& s, const std::vector<double>& p)
      : spec(s), params(p.begin(), p.end()), grads(p.size(), T(0)), layer(s) {
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

// Reads x[n][c][ih][iw], or the zero padding outside the image.
double at(const Tensor<double>& x, int64_t n, int64_t c, int64_t ih, int64_t iw) {
  const Shape& s = x.shape();
  if (ih < 0 || ih >= s[2] || iw < 0 || iw >= s[3]) return 0.0;
  return x[((n * s[1] + c) * s[2] + ih) * s[3] + iw];
}

// The textbook seven loops.
Tensor<double> naive_forward(const ConvCase& c, const Tensor<double>& x, const std::vector<double>& params) {
  const int64_t oh_n = (c.height + 2 * c.pad - c.kernel) / c.stride + 1;
  const int64_t ow_n = (c.width + 2 * c.pad - c.kernel) / c.stride + 1;
  const double* w = params.data();
  const double* b = c.bias ? params.data() + c.out * c.in * c.kernel * c.kernel : nullptr;
  Tensor<double> y(Shape{c.batch, c.out, oh_n, ow_n});
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t o = 0; o < c.out; ++o)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          double sum = b ? b[o] : 0.0;
          for (int64_t ci = 0; ci < c.in; ++ci)
            for (int64_t i = 0; i < c.kernel; ++i)
              for (int64_t j = 0; j < c.kernel; ++j)
                sum += w[((o * c.in + ci) * c.kernel + i) * c.kernel + j] *
                       at(x, n, ci, oh * c.stride - c.pad + i, ow * c.stride - c.pad + j);
          y[((n * c.out + o) * oh_n + oh) * ow_n + ow] = sum;
        }
  return y;
}

// Direct loops for dx, dW and db of the same convolution, given dy.
struct NaiveGrads {
  Tensor<double> dx;
  std::vector<double> dparams;
};
NaiveGrads naive_backward(const ConvCase& c, const Tensor<double>& x, const std::vector<double>& params,
                          const Tensor<double>& dy) {
  const int64_t oh_n = dy.shape()[2], ow_n = dy.shape()[3];
  const int64_t weight_size = c.out * c.in * c.kernel * c.kernel;
  NaiveGrads g{Tensor<double>(x.shape(), 0.0), std::vector<double>(params.size(), 0.0)};
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t o = 0; o < c.out; ++o)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          const double d = dy[((n * c.out + o) * oh_n + oh) * ow_n + ow];
          if (c.bias) g.dparams[static_cast<size_t>(weight_size + o)] += d;
          for (int64_t ci = 0; ci < c.in; ++ci)
            for (int64_t i = 0; i < c.kernel; ++i)
              for (int64_t j = 0; j < c.kernel; ++j) {
                const int64_t ih = oh * c.stride - c.pad + i, iw = ow * c.stride - c.pad + j;
                const int64_t wi = ((o * c.in + ci) * c.kernel + i) * c.kernel + j;
                g.dparams[static_cast<size_t>(wi)] += d * at(x, n, ci, ih, iw);
                if (ih >= 0 && ih < c.height && iw >= 0 && iw < c.width)
                  g.dx[((n * c.in + ci) * c.height + ih) * c.width + iw] += d * params[static_cast<size_t>(wi)];
              }
        }
  return g;
}

const std::vector<ConvCase> kCases = {
    {"same_3x3_bias", 2, 3, 4, 7, 7, 3, 1, 1, true},
    {"stride2_pad1_nonsquare_nobias", 2, 2, 3, 8, 6, 3, 2, 1, false},
    {"pointwise_1x1_bias", 3, 4, 5, 5, 6, 1, 1, 0, true},
    {"pointwise_1x1_stride2", 2, 3, 2, 9, 7, 1, 2, 0, false},
    {"kernel5_pad2_batch1", 1, 2, 3, 6, 5, 5, 1, 2, true},
    {"even_kernel_stride2", 2, 3, 4, 7, 9, 2, 2, 0, true},
    {"pad_wider_than_stride_step", 2, 2, 2, 4, 5, 3, 3, 2, true},
    {"single_channel_valid", 3, 1, 4, 10, 8, 3, 1, 0, true},
};

class Conv2dCase : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2dCase, ForwardMatchesDirectLoops) {
  const ConvCase c = GetParam();
  std::mt19937_64 rng(11);
  const auto params = random_params(spec_of(c), rng);
  const Tensor<double> x = random_tensor(input_shape(c), rng);
  BoundConv<double> conv(spec_of(c), params);
  const Tensor<double>& y = conv.layer.forward(x, cpu::Mode::Train);
  const Tensor<double> expected = naive_forward(c, x, params);
  ASSERT_EQ(y.shape(), expected.shape());
  const Tensor<double> magnitude = naive_forward(c, absolute(x), absolute(params));
  EXPECT_TRUE(within_rounding(y.data(), expected.data(), magnitude.data(), y.numel(),
                              testing::double_against_double(forward_terms(c))));
}

TEST_P(Conv2dCase, BackwardMatchesDirectLoops) {
  const ConvCase c = GetParam();
  std::mt19937_64 rng(12);
  const auto params = random_params(spec_of(c), rng);
  const Tensor<double> x = random_tensor(input_shape(c), rng);
  BoundConv<double> conv(spec_of(c), params);
  const Tensor<double> dy = random_tensor(conv.layer.forward(x, cpu::Mode::Train).shape(), rng);
  const Tensor<double>& dx = conv.layer.backward(dy);
  const NaiveGrads expected = naive_backward(c, x, params, dy);
  ASSERT_EQ(dx.shape(), x.shape());
  const NaiveGrads magnitude = naive_backward(c, absolute(x), absolute(params), absolute(dy));
  EXPECT_TRUE(within_rounding(dx.data(), expected.dx.data(), magnitude.dx.data(), dx.numel(),
                              testing::double_against_double(input_gradient_terms(c)))) << "dx";
  EXPECT_TRUE(within_rounding(conv.grads.data(), expected.dparams.data(), magnitude.dparams.data(),
                              static_cast<int64_t>(params.size()), testing::double_against_double(param_gradient_terms(c))))
      << "dparams";
}

TEST_P(Conv2dCase, GradientsMatchFiniteDifferences) {
  const ConvCase c = GetParam();
  std::mt19937_64 rng(13);
  BoundConv<double> conv(spec_of(c), random_params(spec_of(c), rng));
  const Tensor<double> x = random_tensor(input_shape(c), rng);
  testing::check_layer_gradients(conv.layer, x, conv.params.data(), conv.grads.data(),
                                 static_cast<int64_t>(conv.params.size()), rng);
}

TEST_P(Conv2dCase, FloatAgreesWithDouble) {
  const ConvCase c = GetParam();
  std::mt19937_64 rng(14);
  const auto params = random_params(spec_of(c), rng);
  const Tensor<double> x = random_tensor(input_shape(c), rng);
  BoundConv<double> conv_d(spec_of(c), params);
  BoundConv<float> conv_f(spec_of(c), params);
  const Tensor<double>& y_d = conv_d.layer.forward(x, cpu::Mode::Train);
  const Tensor<float> x_f = cast<float>(x);
  const Tensor<float>& y_f = conv_f.layer.forward(x_f, cpu::Mode::Train);
  const Tensor<double> y_magnitude = naive_forward(c, absolute(x), absolute(params));
  EXPECT_TRUE(within_rounding(y_f.data(), y_d.data(), y_magnitude.data(), y_d.numel(),
                              testing::float_against_double(forward_terms(c)))) << "y";
  const Tensor<double> dy = random_tensor(y_d.shape(), rng);
  const Tensor<double>& dx_d = conv_d.layer.backward(dy);
  const Tensor<float>& dx_f = conv_f.layer.backward(cast<float>(dy));
  const NaiveGrads magnitude = naive_backward(c, absolute(x), absolute(params), absolute(dy));
  EXPECT_TRUE(within_rounding(dx_f.data(), dx_d.data(), magnitude.dx.data(), dx_d.numel(),
                              testing::float_against_double(input_gradient_terms(c)))) << "dx";
  EXPECT_TRUE(within_rounding(conv_f.grads.data(), conv_d.grads.data(), magnitude.dparams.data(),
                              static_cast<int64_t>(params.size()), testing::float_against_double(param_gradient_terms(c))))
      << "dparams";
}

INSTANTIATE_TEST_SUITE_P(Configurations, Conv2dCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<ConvCase>& info) { return info.param.label; });

TEST(Conv2d, BackwardOverwritesGradients) {
  const ConvCase c = kCases[0];
  std::mt19937_64 rng(21);
  BoundConv<double> conv(spec_of(c), random_params(spec_of(c), rng));
  const Tensor<double> x = random_tensor(input_shape(c), rng);
  const Tensor<double> dy = random_tensor(conv.layer.forward(x, cpu::Mode::Train).shape(), rng);
  conv.layer.backward(dy);
  const std::vector<double> first = conv.grads;
  std::fill(conv.grads.begin(), conv.grads.end(), std::numeric_limits<double>::quiet_NaN());
  conv.layer.backward(dy);
  for (size_t i = 0; i < first.size(); ++i) ASSERT_EQ(conv.grads[i], first[i]) << "dparam " << i;
}

TEST(Conv2d, BatchSizeMayChangeBetweenCalls) {
  ConvCase c = kCases[1];
  std::mt19937_64 rng(22);
  const auto params = random_params(spec_of(c), rng);
  BoundConv<double> conv(spec_of(c), params);
  for (int64_t batch : {4, 1, 3}) {
    c.batch = batch;
    const Tensor<double> x = random_tensor(input_shape(c), rng);
    const Tensor<double>& y = conv.layer.forward(x, cpu::Mode::Eval);
    const Tensor<double> expected = naive_forward(c, x, params);
    ASSERT_EQ(y.shape(), expected.shape());
    const Tensor<double> magnitude = naive_forward(c, absolute(x), absolute(params));
    EXPECT_TRUE(within_rounding(y.data(), expected.data(), magnitude.data(), y.numel(),
                                testing::double_against_double(forward_terms(c)))) << "batch " << batch;
    const Tensor<double> dy = random_tensor(y.shape(), rng);
    EXPECT_EQ(conv.layer.backward(dy).shape(), x.shape());
  }
}

TEST(Conv2d, WrongInputChannelsIsAUserError) {
  std::mt19937_64 rng(23);
  const ConvCase c = kCases[0];
  BoundConv<double> conv(spec_of(c), random_params(spec_of(c), rng));
  const Tensor<double> x = random_tensor(Shape{2, c.in + 1, 7, 7}, rng);
  EXPECT_THROW(conv.layer.forward(x, cpu::Mode::Train), UserError);
  const Tensor<double> small = random_tensor(Shape{2, c.in, 7, 7}, rng);
  conv.layer.forward(small, cpu::Mode::Train);
  EXPECT_THROW(conv.layer.backward(random_tensor(Shape{2, c.out, 6, 7}, rng)), UserError);
}

}  // namespace
}  // namespace sb
