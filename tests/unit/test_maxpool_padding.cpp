// Padded MaxPool2d (PyTorch's semantics: padded cells hold -inf, so they never win; floor mode): forward
// against a naive pool over an explicitly padded copy, backward against finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "gradcheck.h"
#include "nn/cpu/pooling.h"

namespace {

using sb::Shape;
using sb::Tensor;
using sb::cpu::Mode;

struct PaddedWindow {
  Shape input;
  int64_t kernel, stride, pad;
};

// ResNet's stem pool (3/2/1) on odd and even sizes, overlapping stride 1, a window that overhangs both
// sides of a small image, and a kernel-2 pool with padding 1 (odd windows at the edges).
const PaddedWindow kPaddedWindows[] = {
    {Shape{2, 3, 7, 7}, 3, 2, 1}, {Shape{1, 2, 8, 6}, 3, 2, 1}, {Shape{2, 1, 5, 5}, 3, 1, 1},
    {Shape{1, 1, 3, 3}, 4, 2, 2}, {Shape{1, 2, 5, 4}, 2, 2, 1},
};

std::string describe(const PaddedWindow& w) {
  return w.input.str() + " k" + std::to_string(w.kernel) + " s" + std::to_string(w.stride) + " p" + std::to_string(w.pad);
}

// Fresh random values without near-ties: a random permutation of evenly spaced values in [lo, hi), so a
// finite-difference step never changes which element of a window is largest.
Tensor<double> distinct_random(const Shape& shape, std::mt19937_64& rng, double lo, double hi) {
  Tensor<double> t(shape);
  std::vector<int64_t> order(static_cast<size_t>(t.numel()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (int64_t i = 0; i < t.numel(); ++i)
    t[i] = lo + (hi - lo) * static_cast<double>(order[static_cast<size_t>(i)]) / static_cast<double>(t.numel());
  return t;
}

// The max pool of x with `pad` cells of -inf on each side, written index by index.
Tensor<double> naive_padded_max(const Tensor<double>& x, int64_t k, int64_t s, int64_t pad) {
  const Shape& in = x.shape();
  const int64_t ph = in[2] + 2 * pad, pw = in[3] + 2 * pad;
  const int64_t oh = (ph - k) / s + 1, ow = (pw - k) / s + 1;
  Tensor<double> y(Shape{in[0], in[1], oh, ow});
  const double minus_inf = -std::numeric_limits<double>::infinity();
  int64_t o = 0;
  for (int64_t n = 0; n < in[0]; ++n)
    for (int64_t c = 0; c < in[1]; ++c)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double best = minus_inf;
          for (int64_t a = 0; a < k; ++a)
            for (int64_t b = 0; b < k; ++b) {
              const int64_t h = i * s + a - pad, w = j * s + b - pad;
              const bool inside = h >= 0 && h < in[2] && w >= 0 && w < in[3];
              const double v = inside ? x[((n * in[1] + c) * in[2] + h) * in[3] + w] : minus_inf;
              best = std::max(best, v);
            }
          y[o++] = best;
        }
  return y;
}

TEST(MaxPool2dPadding, ForwardMatchesAnExplicitlyPaddedPool) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const PaddedWindow& w : kPaddedWindows) {
    SCOPED_TRACE(describe(w));
    const sb::LayerSpec spec = sb::maxpool2d("pool", w.kernel, w.stride, w.pad);
    sb::cpu::MaxPool2d<double> layer(spec);
    // All negative: a zero padding would win every edge window.
    const Tensor<double> x = distinct_random(w.input, rng, -3.0, -1.0);
    const Tensor<double>& y = layer.forward(x, Mode::Train);
    const Tensor<double> expected = naive_padded_max(x, w.kernel, w.stride, w.pad);
    ASSERT_EQ(y.shape(), expected.shape());
    ASSERT_EQ(y.shape(), sb::output_shape(spec, w.input));
    for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y[i], expected[i]) << "y[" << i << "]";
  }
}

TEST(MaxPool2dPadding, GradientsMatchFiniteDifferences) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const PaddedWindow& w : kPaddedWindows) {
    SCOPED_TRACE(describe(w));
    sb::cpu::MaxPool2d<double> layer(sb::maxpool2d("pool", w.kernel, w.stride, w.pad));
    sb::testing::check_layer_gradients(layer, distinct_random(w.input, rng, -1.0, 1.0), nullptr, nullptr, 0, rng);
  }
}

TEST(MaxPool2dPadding, ResNetStemPoolHalvesTheImage) {
  EXPECT_EQ(sb::output_shape(sb::maxpool2d("pool", 3, 2, 1), Shape{2, 64, 112, 112}), (Shape{2, 64, 56, 56}));
  EXPECT_EQ(sb::output_shape(sb::maxpool2d("pool", 3, 2, 1), Shape{2, 64, 32, 32}), (Shape{2, 64, 16, 16}));
}

TEST(MaxPool2dPadding, PaddingBeyondHalfTheKernelIsAUserError) {
  EXPECT_THROW({ sb::cpu::MaxPool2d<float> layer(sb::maxpool2d("pool", 3, 2, 2)); }, sb::UserError);
  EXPECT_THROW(sb::output_shape(sb::maxpool2d("pool", 3, 2, 2), Shape{1, 1, 8, 8}), sb::UserError);
  EXPECT_THROW({ sb::cpu::MaxPool2d<float> layer(sb::maxpool2d("pool", 3, 2, -1)); }, sb::UserError);
}

}  // namespace
