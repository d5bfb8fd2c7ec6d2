// The small-network kernels (kernels/small_conv.h, kernels/pool_dropout.h) called directly, against host
// loops that make the same roundings: the forward outputs and dz bit for bit, the weight and bias gradients
// within the rounding of an fp32 sum, and the gradients bit for bit equal on a second run. Fresh random
// inputs; fp32, fp16 and bf16; NCHW and NHWC; the mnist shapes (batch 64), the wrn's stem and sizes that fill
// no tile or block, odd pool inputs, 1 to 4 input and 1 to 256 output channels with and without the bias and
// the ReLU, both filter orders, mask groups that straddle samples, and a batch slice.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/pool_dropout.h"
#include "kernels/small_conv.h"
#include "nn/cpu/dropout.h"
#include "nn/spec.h"

namespace {

using namespace sb;
using namespace sb::gputest;

constexpr DType kDTypes[] = {DType::F32, DType::F16, DType::BF16};
constexpr Layout kLayouts[] = {Layout::NCHW, Layout::NHWC};

float round_to(float v, DType t) { return quantize(v, t); }

std::vector<float> quantized_random(size_t n, std::mt19937_64& rng, DType t) {
  std::vector<float> v = random_values(n, rng);
  quantize(v, t);
  return v;
}

// A sum's reference in double and the sum of its terms' magnitudes (the scale of an fp32 sum's rounding).
struct Sum {
  double value = 0.0, magnitude = 0.0;
  void add(double term) {
    value += term;
    magnitude += std::fabs(term);
  }
};

// Each gradient within 2e-6 of its terms' magnitudes: an fp32 sum in any order stays far inside; one term
// missing or counted twice (about 1 / terms of the magnitude, terms < 50k here) does not.
::testing::AssertionResult sums_close(const std::vector<float>& got, const std::vector<Sum>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::fabs(got[i] - want[i].value);
    if (!(err <= 2e-6 * want[i].magnitude + 1e-30))
      return ::testing::AssertionFailure() << "gradient " << i << ": got " << got[i] << ", want " << want[i].value
                                           << " (terms' magnitude " << want[i].magnitude << ")";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_bits(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
  return ::testing::AssertionSuccess();
}

// ---- the first convolution ----

struct ConvCase {
  int64_t n, c, h, w, k;
  int pad, stride;
  bool bias, relu;
};

kernels::FirstConvShape conv_shape(const ConvCase& c) {
  kernels::FirstConvShape s;
  s.n = c.n;
  s.c = c.c;
  s.h = c.h;
  s.w = c.w;
  s.k = c.k;
  s.pad = c.pad;
  s.stride = c.stride;
  s.p = (c.h + 2 * c.pad - 3) / c.stride + 1;
  s.q = (c.w + 2 * c.pad - 3) / c.stride + 1;
  return s;
}

// x[n, c, h, w]'s 3x3 window under output (p, q), zero outside the image, in the kernels' order
// (r * 3 + s) * C + c.
std::vector<float> host_window(const std::vector<float>& x, const kernels::FirstConvShape& s, int64_t n, int64_t p,
                               int64_t q) {
  std::vector<float> v(static_cast<size_t>(9 * s.c));
  for (int r = 0; r < 3; ++r)
    for (int t = 0; t < 3; ++t)
      for (int64_t c = 0; c < s.c; ++c) {
        const int64_t h = p * s.stride - s.pad + r, w = q * s.stride - s.pad + t;
        v[static_cast<size_t>((r * 3 + t) * s.c + c)] =
            (h >= 0 && h < s.h && w >= 0 && w < s.w) ? x[static_cast<size_t>(((n * s.c + c) * s.h + h) * s.w + w)] : 0.0f;
      }
  return v;
}

// Where tap (r * 3 + s) * C + c of filter k lies in a buffer of order KRSC or KCRS.
size_t filter_at(const kernels::FirstConvShape& s, bool krsc, int64_t k, int64_t tap) {
  const int64_t c = tap % s.c, rs = tap / s.c;
  return static_cast<size_t>(k * 9 * s.c + (krsc ? tap : c * 9 + rs));
}

// y in NCHW: the kernel's FMA order, the convolution rounded to the dtype, the bias added and rounded, ReLU.
std::vector<float> host_conv_forward(const std::vector<float>& x, const std::vector<float>& w,
                                     const std::vector<float>& bias, const kernels::FirstConvShape& s,
                                     const kernels::FirstConvOptions& o, DType t) {
  std::vector<float> y(static_cast<size_t>(s.n * s.k * s.p * s.q));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < s.k; ++k)
      for (int64_t p = 0; p < s.p; ++p)
        for (int64_t q = 0; q < s.q; ++q) {
          const std::vector<float> v = host_window(x, s, n, p, q);
          float acc = 0.0f;
          for (int64_t j = 0; j < 9 * s.c; ++j)
            acc = std::fmaf(v[static_cast<size_t>(j)], w[filter_at(s, o.filters_krsc, k, j)], acc);
          float z = round_to(acc, t);
          if (o.bias) z = round_to(z + bias[static_cast<size_t>(k)], t);
          y[static_cast<size_t>(((n * s.k + k) * s.p + p) * s.q + q)] = o.relu && !(z > 0.0f) ? 0.0f : z;
        }
  return y;
}

// The gradient buffer's values from NCHW y and dy: k x c x 9 weights in the filter's order, then k biases.
std::vector<Sum> host_conv_backward(const std::vector<float>& x, const std::vector<float>& y,
                                    const std::vector<float>& dy, const kernels::FirstConvShape& s,
                                    const kernels::FirstConvOptions& o) {
  const int64_t weights = s.k * 9 * s.c;
  std::vector<Sum> g(static_cast<size_t>(kernels::first_conv_gradient_count(s, o)));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < s.k; ++k)
      for (int64_t p = 0; p < s.p; ++p)
        for (int64_t q = 0; q < s.q; ++q) {
          const size_t at = static_cast<size_t>(((n * s.k + k) * s.p + p) * s.q + q);
          if (o.relu && !(y[at] > 0.0f)) continue;
          const std::vector<float> v = host_window(x, s, n, p, q);
          for (int64_t j = 0; j < 9 * s.c; ++j)
            g[filter_at(s, o.filters_krsc, k, j)].add(static_cast<double>(dy[at]) * v[static_cast<size_t>(j)]);
          if (o.bias) g[static_cast<size_t>(weights + k)].add(dy[at]);
        }
  return g;
}

void check_first_conv(const ConvCase& c, DType t, Layout l, uint64_t seed) {
  const kernels::FirstConvShape s = conv_shape(c);
  kernels::FirstConvOptions o;
  o.bias = c.bias;
  o.relu = c.relu;
  o.filters_krsc = (seed % 2) == 0;  // either order in either layout
  SCOPED_TRACE(case_name(t, l) + " x [" + std::to_string(c.n) + ", " + std::to_string(c.c) + ", " +
               std::to_string(c.h) + ", " + std::to_string(c.w) + "] k " + std::to_string(c.k) + " pad " +
               std::to_string(c.pad) + " stride " + std::to_string(c.stride) + (c.bias ? " bias" : "") +
               (c.relu ? " relu" : "") + (o.filters_krsc ? " krsc" : " kcrs"));
  std::mt19937_64 rng(seed);
  const size_t ys = static_cast<size_t>(s.n * s.k * s.p * s.q);
  const size_t gs = static_cast<size_t>(kernels::first_conv_gradient_count(s, o));
  const std::vector<float> x = quantized_random(static_cast<size_t>(s.n * s.c * s.h * s.w), rng, t);
  const std::vector<float> w = quantized_random(static_cast<size_t>(s.k * 9 * s.c), rng, t);
  const std::vector<float> bias = random_values(static_cast<size_t>(s.k), rng, 0.01f, 0.5f);
  const std::vector<float> dy = quantized_random(ys, rng, t);

  DeviceMem dx = to_device(to_layout(x, l, s.n, s.c, s.h, s.w), t), dw = to_device(w, t);
  DeviceMem db = to_device(bias, DType::F32);
  DeviceMem dyd = to_device(to_layout(dy, l, s.n, s.k, s.p, s.q), t);
  // One guard value past the gradients: a kernel writing beyond them (a bias it was not asked for) shows.
  DeviceMem y(ys * dtype_size(t)), grads((gs + 1) * 4);
  DeviceMem ws(static_cast<size_t>(kernels::first_conv_backward_workspace(s, o)) * 4);
  y.poison();
  grads.poison();
  ws.poison();
  kernels::first_conv_forward(dx.get(), dw.get(), c.bias ? db.as<float>() : nullptr, y.get(), s, o, l, t, nullptr);
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> y_got = from_layout(download(y.get(), ys, t), l, s.n, s.k, s.p, s.q);
  EXPECT_TRUE(same_bits(y_got, host_conv_forward(x, w, bias, s, o, t))) << "y";

  const std::vector<float> guard = download(grads.get(), gs + 1, DType::F32);
  kernels::first_conv_backward(dx.get(), c.relu ? y.get() : nullptr, dyd.get(), grads.as<float>(), ws.as<float>(), s, o,
                               l, t, nullptr);
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> with_guard = download(grads.get(), gs + 1, DType::F32);
  const std::vector<float> first(with_guard.begin(), with_guard.end() - 1);
  EXPECT_TRUE(sums_close(first, host_conv_backward(x, y_got, dy, s, o))) << "dw, dbias";
  EXPECT_TRUE(same_bits({with_guard.back()}, {guard.back()})) << "a value past the gradients was written";
  grads.poison();
  ws.poison();
  kernels::first_conv_backward(dx.get(), c.relu ? y.get() : nullptr, dyd.get(), grads.as<float>(), ws.as<float>(), s, o,
                               l, t, nullptr);
  EXPECT_TRUE(same_bits(download(grads.get(), gs, DType::F32), first)) << "a second run";
}

TEST(KernelsSmallNet, FirstConvMatchesTheHostLoops) {
  SKIP_WITHOUT_GPU();
  const ConvCase cases[] = {
      {64, 1, 28, 28, 32, 0, 1, true, true},   // mnist-cnn's conv1 at batch 64: 832 tiles over 256 blocks
      {5, 1, 17, 13, 8, 1, 2, true, true},     // padding and stride; positions fill no block
      {3, 1, 9, 30, 1, 0, 1, true, true},      // one channel: 512 lanes per block
      {2, 1, 8, 8, 256, 1, 1, true, true},     // 256 channels: 2 lanes per block
      {7, 1, 28, 28, 64, 0, 1, true, true},    // a wider first layer
      {1, 1, 5, 2100, 4, 1, 1, true, true},    // rows too wide for the NHWC tiles' shared memory: the lanes kernel
      {16, 3, 32, 32, 16, 1, 1, false, false},  // the wrn's stem (batch 16): no bias, batch norm after it
      {3, 3, 11, 9, 32, 1, 2, true, true},     // RGB with bias, ReLU and stride
      {4, 2, 10, 12, 8, 0, 1, true, false},    // two channels, bias without ReLU
      {2, 4, 13, 7, 256, 1, 1, false, true},   // four channels, ReLU without bias; 256 output channels
      {1, 4, 5, 300, 16, 1, 1, false, false},  // four channels too wide for the tiles: the lanes kernel
  };
  uint64_t seed = 100;
  for (const ConvCase& c : cases)
    for (DType t : kDTypes)
      for (Layout l : kLayouts) check_first_conv(c, t, l, ++seed);
}

// ---- bias + ReLU + 2x2 max pool + dropout + flatten ----

struct PoolCase {
  int64_t n, c, h, w;
  double p;
  int64_t first_sample;  // the slice's first sample in a batch of first_sample + n (the mask's offset)
};

// The dropout's multiplier per pool output in (c, h, w) order: 0 dropped, else the scale (1 when p == 0), drawn
// by the CPU layer over the whole batch the slice belongs to.
std::vector<float> host_mask(const PoolCase& pc, int64_t ph, int64_t pw, uint64_t key, uint64_t step) {
  const int64_t per_sample = pc.c * ph * pw;
  if (pc.p == 0.0) return std::vector<float>(static_cast<size_t>(pc.n * per_sample), 1.0f);
  cpu::Dropout<float> layer(sb::dropout("drop", pc.p));
  layer.set_random_stream(key, step);
  Tensor<float> ones(Shape{pc.first_sample + pc.n, pc.c, ph, pw});
  std::fill(ones.data(), ones.data() + ones.shape().numel(), 1.0f);
  const std::vector<float> whole = layer.forward(ones, cpu::Mode::Train).storage();
  return std::vector<float>(whole.begin() + pc.first_sample * per_sample, whole.end());
}

struct PoolReference {
  std::vector<float> y, dz;  // y flattened (c, h, w); dz NCHW
  std::vector<Sum> dbias;
};

PoolReference host_pool(const PoolCase& pc, const std::vector<float>& z, const std::vector<float>& bias,
                        const std::vector<float>& mask, const std::vector<float>& dy, DType t) {
  const int64_t ph = pc.h / 2, pw = pc.w / 2;
  PoolReference r;
  r.y.assign(static_cast<size_t>(pc.n * pc.c * ph * pw), 0.0f);
  r.dz.assign(z.size(), 0.0f);
  r.dbias.resize(static_cast<size_t>(pc.c));
  for (int64_t n = 0; n < pc.n; ++n)
    for (int64_t c = 0; c < pc.c; ++c)
      for (int64_t i = 0; i < ph; ++i)
        for (int64_t j = 0; j < pw; ++j) {
          size_t at[4];
          float v[4];
          int best = 0;
          for (int e = 0; e < 4; ++e) {
            at[e] = static_cast<size_t>(((n * pc.c + c) * pc.h + 2 * i + e / 2) * pc.w + 2 * j + e % 2);
            const float zb = round_to(z[at[e]] + bias[static_cast<size_t>(c)], t);
            v[e] = zb > 0.0f ? zb : 0.0f;
            if (v[e] > v[best]) best = e;
          }
          const size_t flat = static_cast<size_t>(((n * pc.c + c) * ph + i) * pw + j);
          const bool kept = mask[flat] != 0.0f;
          r.y[flat] = kept ? round_to(v[best] * mask[flat], t) : 0.0f;
          const float g = (v[best] > 0.0f && kept) ? round_to(dy[flat] * mask[flat], t) : 0.0f;
          r.dz[at[best]] = g;
          r.dbias[static_cast<size_t>(c)].add(g);
        }
  return r;
}

// The stream key of a case (the Dropout layer's mask key is derived from it and the layer's name).
uint64_t kernels_key(uint64_t seed) { return 0x5eed0000ull + seed; }

void check_pool_dropout(const PoolCase& pc, DType t, Layout l, uint64_t seed) {
  SCOPED_TRACE(case_name(t, l) + " z [" + std::to_string(pc.n) + ", " + std::to_string(pc.c) + ", " +
               std::to_string(pc.h) + ", " + std::to_string(pc.w) + "] p " + std::to_string(pc.p) + " first sample " +
               std::to_string(pc.first_sample));
  const int64_t ph = pc.h / 2, pw = pc.w / 2;
  const size_t zs = static_cast<size_t>(pc.n * pc.c * pc.h * pc.w), ys = static_cast<size_t>(pc.n * pc.c * ph * pw);
  std::mt19937_64 rng(seed);
  const uint64_t key = kernels_key(seed), step = 9;
  const std::vector<float> z = quantized_random(zs, rng, t);
  const std::vector<float> bias = random_values(static_cast<size_t>(pc.c), rng, 0.01f, 0.5f);
  const std::vector<float> dy = quantized_random(ys, rng, t);
  const PoolReference want = host_pool(pc, z, bias, host_mask(pc, ph, pw, key, step), dy, t);

  const kernels::PoolDropoutShape s{pc.n, pc.c, pc.h, pc.w};
  const kernels::PoolDropoutMask mask{pc.p, dropout_mask_key(key, "drop"), step, nullptr,
                                      static_cast<uint64_t>(pc.first_sample * pc.c * ph * pw)};
  DeviceMem zd = to_device(to_layout(z, l, pc.n, pc.c, pc.h, pc.w), t), bd = to_device(bias, DType::F32);
  DeviceMem dyd = to_device(dy, t), y(ys * dtype_size(t)), dz(zs * dtype_size(t)), db(static_cast<size_t>(pc.c) * 4);
  DeviceMem ws(static_cast<size_t>(kernels::pool_dropout_backward_workspace(s)) * 4);
  y.poison();
  kernels::bias_relu_pool_dropout_forward(zd.get(), bd.as<float>(), y.get(), s, mask, l, t, nullptr);
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(same_bits(download(y.get(), ys, t), want.y)) << "y";

  std::vector<float> first_dbias;
  for (int run = 0; run < 2; ++run) {
    dz.poison();
    db.poison();
    ws.poison();
    kernels::bias_relu_pool_dropout_backward(zd.get(), bd.as<float>(), dyd.get(), dz.get(), db.as<float>(),
                                             ws.as<float>(), s, mask, l, t, nullptr);
    ASSERT_CUDA(cudaDeviceSynchronize());
    const std::vector<float> dbias = download(db.get(), static_cast<size_t>(pc.c), DType::F32);
    if (run == 0) {
      EXPECT_TRUE(same_bits(from_layout(download(dz.get(), zs, t), l, pc.n, pc.c, pc.h, pc.w), want.dz)) << "dz";
      EXPECT_TRUE(sums_close(dbias, want.dbias)) << "dbias";
      first_dbias = dbias;
    } else {
      EXPECT_TRUE(same_bits(dbias, first_dbias)) << "dbias on a second run";
    }
  }
}

TEST(KernelsSmallNet, PoolDropoutMatchesTheHostLoops) {
  SKIP_WITHOUT_GPU();
  const PoolCase cases[] = {
      {64, 64, 24, 24, 0.25, 0},  // mnist-cnn's conv2 block at batch 64: 16-position tiles, aligned mask groups
      {64, 64, 24, 24, 0.0, 0},   // the same in evaluation
      {3, 16, 11, 9, 0.25, 0},    // odd sizes: a row and a column outside every window; a partial tile
      {5, 4, 10, 14, 0.5, 2},     // 35 positions: mask groups straddle samples; a slice of a batch
      {2, 1, 7, 10, 0.3, 4},      // one channel: 1024-position tiles, most of them empty
      {2, 256, 6, 6, 0.25, 0},    // 256 channels: 4-position tiles
  };
  uint64_t seed = 200;
  for (const PoolCase& pc : cases)
    for (DType t : kDTypes)
      for (Layout l : kLayouts) check_pool_dropout(pc, t, l, ++seed);
}

}  // namespace
