// MaxPool2d, AvgPool2d and GlobalAvgPool: forward against naive loops, backward against finite
// differences, and MaxPool's tie rule (the first maximum in row-major window order gets the gradient).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/error.h"
#include "gradcheck.h"
#include "nn/cpu/pooling.h"

namespace {

using sb::Shape;
using sb::Tensor;
using sb::cpu::Mode;
using sb::testing::check_layer_gradients;
using sb::testing::random_tensor;

struct Window {
  Shape input;
  int64_t kernel, stride;
};

// Non-overlapping, overlapping (stride < kernel), floor mode with leftovers, and a whole-image window.
const Window kWindows[] = {
    {Shape{2, 3, 6, 6}, 2, 2},
    {Shape{1, 2, 7, 5}, 3, 2},
    {Shape{2, 1, 5, 5}, 2, 1},
    {Shape{1, 1, 4, 4}, 4, 4},
    {Shape{3, 2, 9, 8}, 3, 3},
};

Tensor<float> to_float(const Tensor<double>& x) {
  Tensor<float> f(x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) f[i] = static_cast<float>(x[i]);
  return f;
}

// Element (n, c, h, w) of an NCHW tensor.
double at(const Tensor<double>& t, int64_t n, int64_t c, int64_t h, int64_t w) {
  const Shape& s = t.shape();
  return t[((n * s[1] + c) * s[2] + h) * s[3] + w];
}

// A naive pool: reduce(window values) for every output position, written index by index.
template <typename Reduce>
Tensor<double> naive_pool(const Tensor<double>& x, int64_t k, int64_t s, Reduce reduce) {
  const Shape& in = x.shape();
  const int64_t oh = (in[2] - k) / s + 1, ow = (in[3] - k) / s + 1;
  Tensor<double> y(Shape{in[0], in[1], oh, ow});
  int64_t o = 0;
  for (int64_t n = 0; n < in[0]; ++n)
    for (int64_t c = 0; c < in[1]; ++c)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          std::vector<double> window;
          for (int64_t a = 0; a < k; ++a)
            for (int64_t b = 0; b < k; ++b) window.push_back(at(x, n, c, i * s + a, j * s + b));
          y[o++] = reduce(window);
        }
  return y;
}

double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }
double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double e : v) sum += e;
  return sum / static_cast<double>(v.size());
}

TEST(MaxPool2d, ForwardMatchesNaive) {
  std::mt19937_64 rng(21);
  for (const Window& w : kWindows) {
    SCOPED_TRACE(w.input.str() + " k" + std::to_string(w.kernel) + " s" + std::to_string(w.stride));
    const sb::LayerSpec spec = sb::maxpool2d("pool", w.kernel, w.stride);
    sb::cpu::MaxPool2d<double> layer(spec);
    const Tensor<double> x = random_tensor(w.input, rng);
    const Tensor<double>& y = layer.forward(x, Mode::Train);
    const Tensor<double> expected = naive_pool(x, w.kernel, w.stride, max_of);
    ASSERT_EQ(y.shape(), expected.shape());
    ASSERT_EQ(y.shape(), sb::output_shape(spec, w.input));
    for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y[i], expected[i]);
  }
}

TEST(MaxPool2d, GradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(22);
  for (const Window& w : kWindows) {
    SCOPED_TRACE(w.input.str() + " k" + std::to_string(w.kernel) + " s" + std::to_string(w.stride));
    sb::cpu::MaxPool2d<double> layer(sb::maxpool2d("pool", w.kernel, w.stride));
    check_layer_gradients(layer, random_tensor(w.input, rng), nullptr, nullptr, 0, rng);
  }
}

TEST(MaxPool2d, TieSendsGradientToFirstMaximum) {
  sb::cpu::MaxPool2d<double> layer(sb::maxpool2d("pool", 2, 2));
  // Window 0: 1 3 / 3 2 -> (0,1) wins over (1,0). Window 1: all 5 -> (0,0) of the window wins.
  Tensor<double> x(Shape{1, 1, 2, 4});
  const double values[] = {1, 3, 5, 5, 3, 2, 5, 5};
  for (int i = 0; i < 8; ++i) x[i] = values[i];
  const Tensor<double>& y = layer.forward(x, Mode::Train);
  EXPECT_EQ(y[0], 3.0);
  EXPECT_EQ(y[1], 5.0);
  Tensor<double> dy(Shape{1, 1, 1, 2});
  dy[0] = 0.25;
  dy[1] = -0.75;
  const Tensor<double>& dx = layer.backward(dy);
  const double expected[] = {0, 0.25, -0.75, 0, 0, 0, 0, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(dx[i], expected[i]) << "dx[" << i << "]";
}

// With overlapping windows over a constant image, each window's top-left element takes its gradient.
TEST(MaxPool2d, TiesWithOverlappingWindowsAccumulate) {
  sb::cpu::MaxPool2d<double> layer(sb::maxpool2d("pool", 2, 1));
  Tensor<double> x(Shape{1, 1, 3, 3}, 0.5);
  layer.forward(x, Mode::Train);
  Tensor<double> dy(Shape{1, 1, 2, 2});
  dy[0] = 1; dy[1] = 10; dy[2] = 100; dy[3] = 1000;
  const Tensor<double>& dx = layer.backward(dy);
  const double expected[] = {1, 10, 0, 100, 1000, 0, 0, 0, 0};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(dx[i], expected[i]) << "dx[" << i << "]";
}

TEST(MaxPool2d, FloatMatchesDouble) {
  std::mt19937_64 rng(23);
  const Tensor<double> x = random_tensor(Shape{2, 3, 8, 8}, rng);
  sb::cpu::MaxPool2d<double> d(sb::maxpool2d("pool", 2, 2));
  sb::cpu::MaxPool2d<float> f(sb::maxpool2d("pool", 2, 2));
  const Tensor<double>& yd = d.forward(x, Mode::Train);
  const Tensor<float>& yf = f.forward(to_float(x), Mode::Train);
  for (int64_t i = 0; i < yd.numel(); ++i) EXPECT_EQ(yf[i], static_cast<float>(yd[i]));
}

TEST(AvgPool2d, ForwardMatchesNaive) {
  std::mt19937_64 rng(24);
  for (const Window& w : kWindows) {
    SCOPED_TRACE(w.input.str() + " k" + std::to_string(w.kernel) + " s" + std::to_string(w.stride));
    const sb::LayerSpec spec = sb::avgpool2d("pool", w.kernel, w.stride);
    sb::cpu::AvgPool2d<double> layer(spec);
    const Tensor<double> x = random_tensor(w.input, rng);
    const Tensor<double>& y = layer.forward(x, Mode::Train);
    const Tensor<double> expected = naive_pool(x, w.kernel, w.stride, mean_of);
    ASSERT_EQ(y.shape(), expected.shape());
    ASSERT_EQ(y.shape(), sb::output_shape(spec, w.input));
    for (int64_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-14);
  }
}

TEST(AvgPool2d, HandComputedWindow) {
  sb::cpu::AvgPool2d<double> layer(sb::avgpool2d("pool", 2, 2));
  Tensor<double> x(Shape{1, 1, 2, 2});
  x[0] = 1; x[1] = 2; x[2] = 3; x[3] = 6;
  EXPECT_EQ(layer.forward(x, Mode::Train)[0], 3.0);
  Tensor<double> dy(Shape{1, 1, 1, 1}, 2.0);
  const Tensor<double>& dx = layer.backward(dy);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(dx[i], 0.5);
}

TEST(AvgPool2d, GradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(25);
  for (const Window& w : kWindows) {
    SCOPED_TRACE(w.input.str() + " k" + std::to_string(w.kernel) + " s" + std::to_string(w.stride));
    sb::cpu::AvgPool2d<double> layer(sb::avgpool2d("pool", w.kernel, w.stride));
    check_layer_gradients(layer, random_tensor(w.input, rng), nullptr, nullptr, 0, rng);
  }
}

TEST(GlobalAvgPool, ForwardIsThePlaneMean) {
  std::mt19937_64 rng(26);
  for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{1, 1, 1, 1}, Shape{3, 2, 7, 1}, Shape{2, 4, 8, 8}}) {
    SCOPED_TRACE(shape.str());
    sb::cpu::GlobalAvgPool<double> layer(sb::global_avgpool("gap"));
    const Tensor<double> x = random_tensor(shape, rng);
    const Tensor<double>& y = layer.forward(x, Mode::Train);
    ASSERT_EQ(y.shape(), (Shape{shape[0], shape[1], 1, 1}));
    ASSERT_EQ(y.shape(), sb::output_shape(sb::global_avgpool("gap"), shape));
    const int64_t area = shape[2] * shape[3];
    for (int64_t p = 0; p < shape[0] * shape[1]; ++p) {
      double sum = 0;
      for (int64_t i = 0; i < area; ++i) sum += x[p * area + i];
      EXPECT_NEAR(y[p], sum / static_cast<double>(area), 1e-14);
    }
  }
}

TEST(GlobalAvgPool, GradientsMatchFiniteDifferences) {
  std::mt19937_64 rng(27);
  for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{1, 1, 1, 1}, Shape{3, 2, 7, 1}, Shape{2, 4, 8, 8}}) {
    SCOPED_TRACE(shape.str());
    sb::cpu::GlobalAvgPool<double> layer(sb::global_avgpool("gap"));
    check_layer_gradients(layer, random_tensor(shape, rng), nullptr, nullptr, 0, rng);
  }
}

TEST(Pooling, BadWindowIsAUserError) {
  EXPECT_THROW({ sb::cpu::MaxPool2d<float> layer(sb::maxpool2d("pool", 0, 1)); }, sb::UserError);
  EXPECT_THROW({ sb::cpu::AvgPool2d<float> layer(sb::avgpool2d("pool", 2, 0)); }, sb::UserError);
}

}  // namespace
