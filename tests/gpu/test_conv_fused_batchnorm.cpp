// The convolution graphs that fold a batch norm into the convolutions: forward (conv_forward_fused), a
// scale-bias-ReLU prologue on the input and the output's per-channel sum and sum of squares in the
// epilogue, against the unfused convolution of the normalised input and double-precision sums of its
// output; backward (conv_backward_data_bn_relu), the dgrad with the ReLU's mask and the batch norm's weight
// gradients and input-gradient coefficients, against the plain dgrad and a double-precision batch-norm
// backward; and the weight gradient with the same prologue against the plain one of the normalised input.
// Where cuDNN has no engine for a graph on this GPU, the test says so and skips that case.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "nn/cuda/context.h"
#include "nn/cuda/conv_ops.h"

namespace sb::gputest {
namespace {

struct Case {
  DType dtype;
  DType prologue_dtype;
  bool prologue, statistics;
  cuda::ConvGeometry g;
};

// A context of the compute dtype under NHWC (the layout the fused engines take).
cuda::ContextOptions nhwc(DType dt) {
  cuda::ContextOptions o;
  o.compute = dt;
  o.layout = Layout::NHWC;
  return o;
}

// Elements of a convolution's input, filter and output, and its input channels.
struct Sizes {
  size_t nx, nw, ny, c;
};
Sizes sizes_of(const cuda::ConvGeometry& g) {
  return Sizes{static_cast<size_t>(g.n * g.c * g.h * g.w), static_cast<size_t>(g.k * g.c * g.r * g.s),
               static_cast<size_t>(g.n * g.k * g.p * g.q), static_cast<size_t>(g.c)};
}

std::string name_of(const Case& c) {
  return std::string(dtype_name(c.dtype)) + (c.prologue ? std::string(" prologue(") + dtype_name(c.prologue_dtype) + ")" : "") +
         (c.statistics ? " genstats" : "") + " k" + std::to_string(c.g.r) + " s" + std::to_string(c.g.stride);
}

// Runs one case; false (with a note) when cuDNN has no engine for its graph.
bool run_case(const Case& k) {
  const cuda::ConvGeometry& g = k.g;
  cuda::Context ctx(nhwc(k.dtype));
  std::mt19937_64 rng(7);
  const auto [nx, nw, ny, c] = sizes_of(g);
  std::vector<float> x = random_values(nx, rng, 0.1f, 2.0f, true);
  std::vector<float> w = random_values(nw, rng, 0.01f, 0.2f, true);
  std::vector<float> a = random_values(c, rng, 0.5f, 1.5f, false);
  std::vector<float> b = random_values(c, rng, 0.1f, 0.5f, true);
  quantize(x, k.dtype);
  quantize(w, k.dtype);
  quantize(a, k.prologue_dtype);
  quantize(b, k.prologue_dtype);
  // What the prologue computes, rounded to the convolution's operand dtype (x is NHWC: channel innermost).
  std::vector<float> normalised = x;
  if (k.prologue)
    for (size_t i = 0; i < nx; ++i) normalised[i] = quantize(std::max(0.0f, x[i] * a[i % c] + b[i % c]), k.dtype);
  DeviceMem dx = to_device(x, k.dtype), dn = to_device(normalised, k.dtype), dw = to_device(w, k.dtype);
  DeviceMem da = to_device(a, k.prologue_dtype), db = to_device(b, k.prologue_dtype);
  DeviceMem dy(ny * dtype_size(k.dtype)), dref(ny * dtype_size(k.dtype));
  DeviceMem dsum(static_cast<size_t>(g.k) * 4), dsq(static_cast<size_t>(g.k) * 4);
  dy.poison();
  cuda::conv_forward(ctx, g, k.prologue ? dn.get() : dx.get(), dw.get(), dref.get(), nullptr);
  cuda::ConvPrologue pro{da.get(), db.get(), k.prologue_dtype, true};
  cuda::ConvStatistics stats{dsum.as<float>(), dsq.as<float>()};
  if (!cuda::conv_forward_fused(ctx, g, dx.get(), k.prologue ? &pro : nullptr, dw.get(), dy.get(),
                                k.statistics ? &stats : nullptr)) {
    std::printf("[ no engine ] %s\n", name_of(k).c_str());
    return false;
  }
  ctx.synchronize();
  const std::vector<float> y = download(dy.get(), ny, k.dtype), ref = download(dref.get(), ny, k.dtype);
  EXPECT_TRUE(all_close(y, ref, tolerance(k.dtype))) << name_of(k);
  if (k.statistics) {
    // Run again over poisoned sums: the epilogue writes them, it does not add to them.
    dsum.poison();
    dsq.poison();
    EXPECT_TRUE(cuda::conv_forward_fused(ctx, g, dx.get(), k.prologue ? &pro : nullptr, dw.get(), dy.get(), &stats));
    ctx.synchronize();
    const std::vector<float> sum = download(dsum.get(), static_cast<size_t>(g.k), DType::F32);
    const std::vector<float> sq = download(dsq.get(), static_cast<size_t>(g.k), DType::F32);
    for (int64_t c = 0; c < g.k; ++c) {
      double s = 0, s2 = 0, s_abs = 0;
      for (size_t i = static_cast<size_t>(c); i < ny; i += static_cast<size_t>(g.k)) {
        s += y[i];
        s2 += double(y[i]) * y[i];
        s_abs += std::fabs(y[i]);
      }
      // y is the sums' input rounded to the I/O dtype, so they agree to about its precision.
      const double tol = tolerance(k.dtype);
      EXPECT_NEAR(sum[c], s, tol * s_abs) << name_of(k) << " channel " << c;
      EXPECT_NEAR(sq[c], s2, tol * s2) << name_of(k) << " channel " << c;
    }
  }
  std::printf("[ fused ok  ] %s\n", name_of(k).c_str());
  return true;
}

cuda::ConvGeometry geometry(int64_t c, int64_t k, int64_t r, int64_t stride, int64_t hw) {
  const int64_t pad = r / 2;
  const int64_t out = (hw + 2 * pad - r) / stride + 1;
  return cuda::ConvGeometry{8, c, hw, hw, k, r, r, out, out, pad, stride};
}

TEST(ConvFusedBatchNorm, PrologueAndStatisticsMatchTheSeparatePasses) {
  SKIP_WITHOUT_GPU();
  int ran = 0, tried = 0;
  for (DType dt : {DType::BF16, DType::F16})
    for (const cuda::ConvGeometry& g : {geometry(32, 64, 3, 1, 12), geometry(64, 32, 1, 1, 12), geometry(32, 64, 1, 2, 12)})
      for (DType pd : {DType::F32, dt}) {
        for (const auto& parts : {std::pair{false, true}, std::pair{true, false}, std::pair{true, true}}) {
          if (!parts.first && pd != DType::F32) continue;  // the prologue dtype matters only with a prologue
          ++tried;
          ran += run_case(Case{dt, pd, parts.first, parts.second, g}) ? 1 : 0;
          if (HasFailure()) return;
        }
      }
  std::printf("%d of %d fused graphs had an engine\n", ran, tried);
}

// One dgrad-dReLU-dBN case: false (with a note) when no engine runs it.
bool run_backward_case(DType dt, const cuda::ConvGeometry& g) {
  cuda::Context ctx(nhwc(dt));
  std::mt19937_64 rng(11);
  const auto [nx, nw, ny, c] = sizes_of(g);
  std::vector<float> x = random_values(nx, rng, 0.1f, 2.0f, true), w = random_values(nw, rng, 0.01f, 0.2f, true);
  std::vector<float> dy = random_values(ny, rng, 0.1f, 1.0f, true);
  quantize(x, dt);
  quantize(w, dt);
  quantize(dy, dt);
  // The forward's statistics of x, per channel (x is NHWC: channel innermost).
  std::vector<double> mean(c, 0.0), var(c, 0.0);
  const double count = static_cast<double>(nx / c);
  for (size_t i = 0; i < nx; ++i) mean[i % c] += x[i] / count;
  for (size_t i = 0; i < nx; ++i) var[i % c] += (x[i] - mean[i % c]) * (x[i] - mean[i % c]) / count;
  std::vector<float> mean32(c), neg_mean(c), inv_std(c);
  for (size_t k = 0; k < c; ++k) {
    mean32[k] = static_cast<float>(mean[k]);
    neg_mean[k] = static_cast<float>(-mean[k]);
    inv_std[k] = static_cast<float>(1.0 / std::sqrt(var[k] + 1e-5));
  }
  const std::vector<float> gamma = random_values(c, rng, 0.5f, 1.5f, false), beta = random_values(c, rng, 0.1f, 0.5f, true);
  DeviceMem dx_in = to_device(x, dt), dw = to_device(w, dt), ddy = to_device(dy, dt);
  DeviceMem dmean = to_device(mean32, DType::F32), dneg = to_device(neg_mean, DType::F32);
  DeviceMem dinv = to_device(inv_std, DType::F32);
  DeviceMem dgamma = to_device(gamma, DType::F32), dbeta = to_device(beta, DType::F32);
  DeviceMem dz(nx * dtype_size(dt)), dg(nx * dtype_size(dt)), coeff(5 * c * 4);
  coeff.poison();
  cuda::conv_backward_data(ctx, g, ddy.get(), dw.get(), dz.get());
  float* k = coeff.as<float>();
  const cuda::DgradBatchNorm bn{dx_in.get(), dmean.as<float>(), dneg.as<float>(), dinv.as<float>(), dgamma.as<float>(),
                                dbeta.as<float>(), dg.get(), k, k + c, k + 2 * c, k + 3 * c, k + 4 * c};
  const std::string name = std::string(dtype_name(dt)) + " dgrad+drelu+dbn k" + std::to_string(g.r);
  if (!cuda::conv_backward_data_bn_relu(ctx, g, ddy.get(), dw.get(), bn)) {
    std::printf("[ no engine ] %s\n", name.c_str());
    return false;
  }
  ctx.synchronize();
  // The reference: the plain dgrad, masked where the batch norm's output is not positive, and the batch
  // norm's backward in double.
  const std::vector<float> z = download(dz.get(), nx, dt), got_g = download(dg.get(), nx, dt);
  std::vector<float> want_g(nx);
  std::vector<double> dbias(c, 0.0), dscale(c, 0.0);
  for (size_t i = 0; i < nx; ++i) {
    const size_t ch = i % c;
    const double xhat = (x[i] - mean[ch]) * inv_std[ch];
    want_g[i] = gamma[ch] * xhat + beta[ch] > 0 ? z[i] : 0.0f;
    dbias[ch] += want_g[i];
    dscale[ch] += want_g[i] * xhat;
  }
  EXPECT_TRUE(all_close(got_g, want_g, tolerance(dt))) << name << " masked gradient";
  const std::vector<float> got = download(coeff.get(), 5 * c, DType::F32);
  double worst_dx = 0.0, scale_dx = 0.0;
  for (size_t ch = 0; ch < c; ++ch) {
    EXPECT_NEAR(got[ch], dscale[ch], tolerance(dt) * (1.0 + std::fabs(dscale[ch]))) << name << " dscale " << ch;
    EXPECT_NEAR(got[c + ch], dbias[ch], tolerance(dt) * (1.0 + std::fabs(dbias[ch]))) << name << " dbias " << ch;
  }
  // dx from the coefficients against dx = gamma * inv_std * (g - dbias/M - xhat * dscale/M).
  for (size_t i = 0; i < nx; ++i) {
    const size_t ch = i % c;
    const double xhat = (x[i] - mean[ch]) * inv_std[ch];
    const double want = gamma[ch] * inv_std[ch] * (want_g[i] - dbias[ch] / count - xhat * dscale[ch] / count);
    const double have = got[2 * c + ch] * double(want_g[i]) + got[3 * c + ch] * double(x[i]) + got[4 * c + ch];
    worst_dx = std::max(worst_dx, std::fabs(have - want));
    scale_dx = std::max(scale_dx, std::fabs(want));
  }
  EXPECT_LE(worst_dx, tolerance(dt) * scale_dx) << name << " dx from the coefficients";
  std::printf("[ fused ok  ] %s\n", name.c_str());
  return true;
}

TEST(ConvFusedBatchNorm, DgradDreluBnWeightsMatchTheSeparatePasses) {
  SKIP_WITHOUT_GPU();
  int ran = 0, tried = 0;
  for (DType dt : {DType::BF16, DType::F16})
    for (const cuda::ConvGeometry& g : {geometry(32, 64, 3, 1, 12), geometry(64, 32, 1, 1, 12)}) {
      ++tried;
      ran += run_backward_case(dt, g) ? 1 : 0;
      if (HasFailure()) return;
    }
  std::printf("%d of %d dgrad-dReLU-dBN graphs had an engine\n", ran, tried);
}

// The weight gradient of a convolution whose input went through the prologue: applying it as wgrad loads x,
// against the plain wgrad of the normalised input (host-computed, rounded to the I/O dtype).
bool run_wgrad_case(DType dt, DType prologue_dtype, const cuda::ConvGeometry& g) {
  cuda::Context ctx(nhwc(dt));
  std::mt19937_64 rng(13);
  const auto [nx, nw, ny, c] = sizes_of(g);
  std::vector<float> x = random_values(nx, rng, 0.1f, 2.0f, true), dy = random_values(ny, rng, 0.1f, 1.0f, true);
  std::vector<float> a = random_values(c, rng, 0.5f, 1.5f, false), b = random_values(c, rng, 0.1f, 0.5f, true);
  quantize(x, dt);
  quantize(dy, dt);
  quantize(a, prologue_dtype);
  quantize(b, prologue_dtype);
  std::vector<float> normalised(nx);
  for (size_t i = 0; i < nx; ++i) normalised[i] = quantize(std::max(0.0f, x[i] * a[i % c] + b[i % c]), dt);
  DeviceMem dx = to_device(x, dt), dn = to_device(normalised, dt), ddy = to_device(dy, dt);
  DeviceMem da = to_device(a, prologue_dtype), db = to_device(b, prologue_dtype);
  DeviceMem dw(nw * dtype_size(dt)), dref(nw * dtype_size(dt));
  dw.poison();
  cuda::conv_backward_filter(ctx, g, dn.get(), ddy.get(), dref.get(), dt, ctx.stream());
  const cuda::ConvPrologue pro{da.get(), db.get(), prologue_dtype, true};
  const std::string name = std::string(dtype_name(dt)) + " wgrad prologue(" + dtype_name(prologue_dtype) + ") k" +
                           std::to_string(g.r);
  if (!cuda::conv_backward_filter_fused(ctx, g, dx.get(), pro, ddy.get(), dw.get(), dt, ctx.stream())) {
    std::printf("[ no engine ] %s\n", name.c_str());
    return false;
  }
  ctx.synchronize();
  EXPECT_TRUE(all_close(download(dw.get(), nw, dt), download(dref.get(), nw, dt), tolerance(dt))) << name;
  std::printf("[ fused ok  ] %s\n", name.c_str());
  return true;
}

TEST(ConvFusedBatchNorm, WgradWithThePrologueMatchesTheNormalisedInput) {
  SKIP_WITHOUT_GPU();
  int ran = 0, tried = 0;
  for (DType dt : {DType::BF16, DType::F16})
    for (DType pd : {DType::F32, dt})
      for (const cuda::ConvGeometry& g : {geometry(32, 64, 3, 1, 12), geometry(64, 32, 1, 1, 12)}) {
        ++tried;
        ran += run_wgrad_case(dt, pd, g) ? 1 : 0;
        if (HasFailure()) return;
      }
  std::printf("%d of %d wgrad-with-prologue graphs had an engine\n", ran, tried);
}

}  // namespace
}  // namespace sb::gputest
