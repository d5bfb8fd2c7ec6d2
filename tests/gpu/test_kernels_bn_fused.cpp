// The fused batch-norm kernels (kernels/bn_fused.h) on their own: the statistics and finalize pass against
// a double reference (saved mean and inverse std, running statistics, the apply coefficients), also for
// channels whose mean dwarfs their spread; the apply pass's dropout mask against kernels/dropout.h's
// (bit-identical, by value or device step) with and without the residual, and the keep bits it stores
// against the same mask for every element; the backward passes against a double reference, the same bits
// from stored keep bits as from drawing the mask, and the same bits on a second run; and which tensors they
// take; the finalize from a convolution's sums (bn_finalize_sums) against the same double reference, and the
// apply pass that finalizes them itself against it; and the dx pass from sums rebuilt from the weight
// gradients (bn_backward_sums_from_gradients).
// Shapes include odd sizes, many rows of partial sums per channel, and more than 256 channel groups.
// The layer tests (test_layers_bn_fused.cpp) check the full forward and backward against the CPU layers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/bn_fused.h"
#include "kernels/dropout.h"
#include "kernels/elementwise.h"

namespace {

using namespace sb;
using namespace sb::gputest;

const DType kDtypes[] = {DType::F32, DType::BF16, DType::F16};
const Layout kLayouts[] = {Layout::NCHW, Layout::NHWC};

kernels::BnFusedShape shape_of(int64_t n, int64_t c, int64_t h, int64_t w, Layout l, DType t) {
  return kernels::BnFusedShape{n, c, h, w, l, t};
}

// A tensor's dimensions, in the order of its logical shape [n, c, h, w].
struct Dims {
  int64_t n, c, h, w;
};

// The finalize's arguments for c channels: gamma and beta; the saved mean, inverse std, a and b written into
// `state` [4c]; the running statistics at running [2c].
kernels::BnFinalize finalize_into(int64_t c, const DeviceMem& gamma, const DeviceMem& beta, const DeviceMem& running,
                                  const DeviceMem& state) {
  kernels::BnFinalize f;
  f.scale = gamma.as<float>();
  f.bias = beta.as<float>();
  f.saved_mean = state.as<float>();
  f.saved_inv_std = state.as<float>() + c;
  f.running_mean = running.as<float>();
  f.running_var = running.as<float>() + c;
  f.a = state.as<float>() + 2 * c;
  f.b = state.as<float>() + 3 * c;
  return f;
}

// The training forward's first two passes on x: the statistics, then finalize (finalize_into). Returns the
// finalize arguments.
kernels::BnFinalize statistics_and_finalize(const kernels::BnFusedShape& s, const DeviceMem& x, const DeviceMem& gamma,
                                            const DeviceMem& beta, const DeviceMem& running, const DeviceMem& state,
                                            const DeviceMem& workspace) {
  kernels::bn_channel_statistics(s, kernels::BnStatistics{x.get(), workspace.get()}, nullptr);
  kernels::BnFinalize f = finalize_into(s.c, gamma, beta, running, state);
  f.workspace = workspace.get();
  kernels::bn_finalize_statistics(s, f, nullptr);
  return f;
}

// The backward passes' arguments after a forward finalized as `f`: dgamma then dbeta into grads [2c].
kernels::BnBackward backward_args(const kernels::BnFinalize& f, int64_t c, const void* x, const void* dy, void* dx,
                                  const DeviceMem& grads) {
  kernels::BnBackward b;
  b.x = x;
  b.dy = dy;
  b.a = f.a;
  b.b = f.b;
  b.scale = f.scale;
  b.saved_mean = f.saved_mean;
  b.saved_inv_std = f.saved_inv_std;
  b.workspace = const_cast<void*>(f.workspace);
  b.dscale = grads.as<float>();
  b.dbias = grads.as<float>() + c;
  b.dx = dx;
  return b;
}

TEST(KernelsBnFused, StatisticsAndFinalizeMatchDoubleReference) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(41);
  // One block; 40 groups of 8 channels; many blocks of rows; more rows than one wave of blocks (each thread
  // loops); more than 256 channel groups (two blocks across the channels).
  // Rows of 14 and 7 (ResNet's later stages): NHWC walks them as one row of pixels, NCHW takes h*w % 4 == 0.
  for (Dims d : {Dims{4, 16, 8, 8}, Dims{3, 24, 4, 12}, Dims{2, 320, 4, 4}, Dims{64, 8, 8, 8}, Dims{512, 16, 32, 32},
                 Dims{2, 2064, 1, 4}, Dims{4, 16, 14, 14}, Dims{8, 24, 7, 7}})
    for (DType t : kDtypes)
      for (Layout l : kLayouts) {
        SCOPED_TRACE(case_name(t, l) + " c " + std::to_string(d.c));
        const int64_t plane = d.h * d.w, count = d.n * plane;
        // Channel means up to 40 with spreads of 0.5: a plain sum of squares would cancel in fp32.
        std::normal_distribution<float> normal(0.0f, 0.5f);
        std::uniform_real_distribution<float> centre(-40.0f, 40.0f);
        std::vector<float> mu(static_cast<size_t>(d.c));
        for (float& m : mu) m = centre(rng);
        std::vector<float> x(static_cast<size_t>(d.n * d.c * plane));
        for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i)
          x[static_cast<size_t>(i)] = quantize(mu[static_cast<size_t>((i / plane) % d.c)] + normal(rng), t);
        const std::vector<float> gamma = random_values(static_cast<size_t>(d.c), rng, 0.5f, 1.5f);
        const std::vector<float> beta = random_values(static_cast<size_t>(d.c), rng, 0.1f, 0.5f);
        const std::vector<float> rm = random_values(static_cast<size_t>(d.c), rng, 0.1f, 0.5f);
        const std::vector<float> rv = random_values(static_cast<size_t>(d.c), rng, 0.5f, 2.0f, false);

        std::vector<float> want_mean, want_inv, want_rm, want_rv, want_a, want_b;
        for (int64_t c = 0; c < d.c; ++c) {
          double sum = 0, sq = 0;
          for (int64_t n = 0; n < d.n; ++n)
            for (int64_t p = 0; p < plane; ++p) sum += x[static_cast<size_t>((n * d.c + c) * plane + p)];
          const double mean = sum / count;
          for (int64_t n = 0; n < d.n; ++n)
            for (int64_t p = 0; p < plane; ++p) {
              const double v = x[static_cast<size_t>((n * d.c + c) * plane + p)] - mean;
              sq += v * v;
            }
          const double var = sq / count, inv = 1.0 / std::sqrt(var + 1e-5);
          const size_t k = static_cast<size_t>(c);
          want_mean.push_back(static_cast<float>(mean));
          want_inv.push_back(static_cast<float>(inv));
          want_rm.push_back(static_cast<float>(0.9 * rm[k] + 0.1 * mean));
          want_rv.push_back(static_cast<float>(0.9 * rv[k] + 0.1 * var * count / (count - 1)));
          want_a.push_back(static_cast<float>(gamma[k] * inv));
          want_b.push_back(static_cast<float>(beta[k] - mean * gamma[k] * inv));
        }

        DeviceMem dx = to_device(to_layout(x, l, d.n, d.c, d.h, d.w), t);
        DeviceMem dgamma = to_device(gamma, DType::F32), dbeta = to_device(beta, DType::F32);
        std::vector<float> running_stats = rm;
        running_stats.insert(running_stats.end(), rv.begin(), rv.end());
        DeviceMem running = to_device(running_stats, DType::F32);  // mean [c], then variance [c]
        const kernels::BnFusedShape s = shape_of(d.n, d.c, d.h, d.w, l, t);
        DeviceMem workspace(kernels::bn_fused_workspace_bytes(s)), out(static_cast<size_t>(4 * d.c) * 4);
        workspace.poison();  // every partial sum must be written
        out.poison();
        const bool takes = kernels::bn_fused_supports(s, false, {dx.get()});
        ASSERT_EQ(takes, l == Layout::NHWC || plane % 4 == 0);
        if (!takes) continue;
        statistics_and_finalize(s, dx, dgamma, dbeta, running, out, workspace);
        ASSERT_CUDA(cudaDeviceSynchronize());
        const std::vector<float> got = download(out.get(), static_cast<size_t>(4 * d.c), DType::F32);
        auto part = [&](int k) {
          return std::vector<float>(got.begin() + k * d.c, got.begin() + (k + 1) * d.c);
        };
        EXPECT_TRUE(all_close(part(0), want_mean, 1e-5));
        EXPECT_TRUE(all_close(part(1), want_inv, 1e-4));  // 1/std of a 0.5 spread around |mean| <= 40
        EXPECT_TRUE(all_close(part(2), want_a, 1e-4));
        EXPECT_TRUE(all_close(part(3), want_b, 1e-4, max_abs(want_b)));  // beta - mean * a cancels
        const std::vector<float> got_running = download(running.get(), static_cast<size_t>(2 * d.c), DType::F32);
        EXPECT_TRUE(all_close(std::vector<float>(got_running.begin(), got_running.begin() + d.c), want_rm, 1e-5));
        EXPECT_TRUE(all_close(std::vector<float>(got_running.begin() + d.c, got_running.end()), want_rv, 1e-4));
      }
}

// The finalize from per-channel sums of x and x^2, as a convolution's epilogue gives them (fp32), against
// double statistics of the same values: channel means of a few spreads, as convolution outputs have (the
// unshifted sums lose precision as |mean| / std grows, see bn_fused.h).
TEST(KernelsBnFused, FinalizeFromSumsMatchesDoubleReference) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(43);
  const int64_t c = 40, count = 256 * 49;  // one ResNet-50 channel of the last stage at batch 256
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<float> sum(static_cast<size_t>(c)), sqsum(static_cast<size_t>(c));
  std::vector<double> mean(static_cast<size_t>(c)), var(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch) {
    const double centre = 3.0 * normal(rng), spread = 0.5 + std::fabs(normal(rng));
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < count; ++i) {
      const double v = centre + spread * normal(rng);
      s1 += v;
      s2 += v * v;
    }
    const size_t k = static_cast<size_t>(ch);
    sum[k] = static_cast<float>(s1);
    sqsum[k] = static_cast<float>(s2);
    mean[k] = s1 / count;
    var[k] = s2 / count - mean[k] * mean[k];
  }
  const std::vector<float> gamma = random_values(static_cast<size_t>(c), rng, 0.5f, 1.5f);
  const std::vector<float> beta = random_values(static_cast<size_t>(c), rng, 0.1f, 0.5f);
  std::vector<float> running = random_values(static_cast<size_t>(2 * c), rng, 0.5f, 2.0f, false);
  std::vector<float> want_mean, want_inv, want_rm, want_rv, want_a, want_b;
  for (size_t k = 0; k < static_cast<size_t>(c); ++k) {
    const double inv = 1.0 / std::sqrt(var[k] + 1e-5);
    want_mean.push_back(static_cast<float>(mean[k]));
    want_inv.push_back(static_cast<float>(inv));
    want_rm.push_back(static_cast<float>(0.9 * running[k] + 0.1 * mean[k]));
    want_rv.push_back(static_cast<float>(0.9 * running[static_cast<size_t>(c) + k] + 0.1 * var[k] * count / (count - 1)));
    want_a.push_back(static_cast<float>(gamma[k] * inv));
    want_b.push_back(static_cast<float>(beta[k] - mean[k] * gamma[k] * inv));
  }
  DeviceMem dsum = to_device(sum, DType::F32), dsq = to_device(sqsum, DType::F32);
  DeviceMem dgamma = to_device(gamma, DType::F32), dbeta = to_device(beta, DType::F32);
  DeviceMem drunning = to_device(running, DType::F32), out(static_cast<size_t>(4 * c) * 4);
  out.poison();
  const kernels::BnFinalize f = finalize_into(c, dgamma, dbeta, drunning, out);
  kernels::bn_finalize_sums(shape_of(256, c, 7, 7, Layout::NHWC, DType::BF16), dsum.as<float>(), dsq.as<float>(), f,
                            nullptr);
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> got = download(out.get(), static_cast<size_t>(4 * c), DType::F32);
  auto part = [&](int k) { return std::vector<float>(got.begin() + k * c, got.begin() + (k + 1) * c); };
  // fp32 sums of 12,544 values: E[x^2] - mean^2 keeps about 1e-4 of the variance at |mean| / std up to ~10.
  EXPECT_TRUE(all_close(part(0), want_mean, 1e-5));
  EXPECT_TRUE(all_close(part(1), want_inv, 1e-3));
  EXPECT_TRUE(all_close(part(2), want_a, 1e-3));
  EXPECT_TRUE(all_close(part(3), want_b, 1e-3, max_abs(want_b)));
  const std::vector<float> got_running = download(drunning.get(), static_cast<size_t>(2 * c), DType::F32);
  EXPECT_TRUE(all_close(std::vector<float>(got_running.begin(), got_running.begin() + c), want_rm, 1e-5));
  EXPECT_TRUE(all_close(std::vector<float>(got_running.begin() + c, got_running.end()), want_rv, 1e-3));
}

// An apply pass given a convolution's sums (BnApply::sum) finalizes them itself: the same output, saved
// statistics, running statistics and coefficients, bit for bit, as bn_finalize_sums followed by the apply
// pass from the start; with the residual and the ReLU after it, walked from either end, over more than one
// block of channels and over rows walked as one (7x7).
TEST(KernelsBnFused, ApplyFinalizesGivenSumsAsTheFinalizePass) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(46);
  for (Dims d : {Dims{2, 2056, 4, 8}, Dims{8, 64, 7, 7}})
    for (DType t : kDtypes)
      for (bool from_end : {false, true}) {
        SCOPED_TRACE(case_name(t, Layout::NHWC) + " c " + std::to_string(d.c) + (from_end ? " from the end" : ""));
        const kernels::BnFusedShape s = shape_of(d.n, d.c, d.h, d.w, Layout::NHWC, t);
        const auto size = static_cast<size_t>(d.n * d.c * d.h * d.w), uc = static_cast<size_t>(d.c);
        const double count = static_cast<double>(d.n * d.h * d.w);
        std::vector<float> x = random_values(size, rng, 0.1f, 2.0f, false), r = random_values(size, rng);
        quantize(x, t);
        quantize(r, t);
        std::vector<float> sum(uc, 0.0f), sqsum(uc, 0.0f);
        for (size_t i = 0; i < size; ++i) {
          sum[i % uc] += x[i];
          sqsum[i % uc] += x[i] * x[i];
        }
        const std::vector<float> running = random_values(2 * uc, rng, 0.5f, 2.0f);
        DeviceMem dx = to_device(x, t), dres = to_device(r, t), dsum = to_device(sum, DType::F32);
        DeviceMem dsq = to_device(sqsum, DType::F32), dgamma = to_device(random_values(uc, rng, 0.5f, 1.5f), DType::F32);
        DeviceMem dbeta = to_device(random_values(uc, rng, -0.5f, 0.5f), DType::F32);
        DeviceMem running_pass = to_device(running, DType::F32), running_apply = to_device(running, DType::F32);
        DeviceMem state_pass(4 * uc * 4), state_apply(4 * uc * 4);
        DeviceMem y_pass(size * dtype_size(t)), y_apply(size * dtype_size(t));
        for (const DeviceMem* m : {&state_pass, &state_apply, &y_pass, &y_apply}) m->poison();
        kernels::BnApply a;
        a.x = dx.get();
        a.relu = true;
        a.relu_after_residual = true;
        a.residual = dres.get();
        const kernels::BnFinalize f_pass = finalize_into(d.c, dgamma, dbeta, running_pass, state_pass);
        kernels::bn_finalize_sums(s, dsum.as<float>(), dsq.as<float>(), f_pass, nullptr);
        a.a = f_pass.a;
        a.b = f_pass.b;
        a.y = y_pass.get();
        kernels::bn_apply_forward(s, a, nullptr);
        a.a = nullptr;  // not read: the pass computes them
        a.b = nullptr;
        a.sum = dsum.as<float>();
        a.sqsum = dsq.as<float>();
        a.from_end = from_end;  // the elements come out the same in either order
        a.finalize = finalize_into(d.c, dgamma, dbeta, running_apply, state_apply);
        a.y = y_apply.get();
        kernels::bn_apply_forward(s, a, nullptr);
        ASSERT_CUDA(cudaDeviceSynchronize());
        EXPECT_EQ(download(y_apply.get(), size, t), download(y_pass.get(), size, t));
        const std::vector<float> saved = download(state_apply.get(), 4 * uc, DType::F32);
        EXPECT_EQ(saved, download(state_pass.get(), 4 * uc, DType::F32));
        EXPECT_EQ(download(running_apply.get(), 2 * uc, DType::F32), download(running_pass.get(), 2 * uc, DType::F32));
        EXPECT_NEAR(saved[0], sum[0] / count, 1e-3 * std::abs(sum[0] / count)) << "the saved mean";
      }
}

// A dgrad that took the reduction (conv_backward_data_bn_relu) leaves dscale and dbias; the workspace's sums
// rebuilt from them (bn_backward_sums_from_gradients) give the dx pass the dx of the reduce pass's own sums,
// to fp32 rounding of the sums.
TEST(KernelsBnFused, SumsFromTheWeightGradientsGiveTheSameDx) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(45);
  for (DType t : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(case_name(t, Layout::NHWC));
    const int64_t n = 8, c = 32, h = 7, w = 7;
    const kernels::BnFusedShape s = shape_of(n, c, h, w, Layout::NHWC, t);
    const auto usize = static_cast<size_t>(n * c * h * w), uc = static_cast<size_t>(c);
    std::vector<float> x = random_values(usize, rng, 0.05f, 2.0f), dy = random_values(usize, rng, 0.05f, 1.0f);
    quantize(x, t);
    quantize(dy, t);
    DeviceMem dxin = to_device(x, t), ddy = to_device(dy, t), dx_reduce(usize * dtype_size(t)), dx_given(usize * dtype_size(t));
    DeviceMem dgamma = to_device(random_values(uc, rng, 0.5f, 1.5f), DType::F32);
    DeviceMem dbeta = to_device(random_values(uc, rng, 0.1f, 0.5f), DType::F32);
    DeviceMem running = to_device(std::vector<float>(2 * uc, 1.0f), DType::F32);
    DeviceMem state(4 * uc * 4), grads(2 * uc * 4), workspace(kernels::bn_fused_workspace_bytes(s));
    const kernels::BnFinalize f = statistics_and_finalize(s, dxin, dgamma, dbeta, running, state, workspace);
    kernels::BnBackward b = backward_args(f, c, dxin.get(), ddy.get(), dx_reduce.get(), grads);
    kernels::bn_backward_reduce(s, b, nullptr);
    kernels::bn_backward_dx(s, b, nullptr);
    workspace.poison();  // only the rebuilt sums may serve the second dx pass
    kernels::bn_backward_sums_from_gradients(s, b.dscale, b.dbias, b.saved_inv_std, workspace.get(), nullptr);
    b.dx = dx_given.get();
    kernels::bn_backward_dx(s, b, nullptr);
    ASSERT_CUDA(cudaDeviceSynchronize());
    EXPECT_TRUE(all_close(download(dx_given.get(), usize, t), download(dx_reduce.get(), usize, t), tolerance(t)));
  }
}

// With a = 1, b = 0 and positive x, the apply pass is the dropout alone: its mask and values must be those
// of kernels::dropout_forward bit for bit, also when the step comes from device memory, and the residual
// (with a per-channel bias, when given) is added on top.
TEST(KernelsBnFused, ApplyDrawsTheDropoutKernelsMask) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(42);
  const int64_t n = 3, c = 16, h = 4, w = 8, size = n * c * h * w;
  const uint64_t key = 0x1234abcdull, step = 77;
  const double p = 0.4;
  for (DType t : kDtypes)
    for (Layout l : kLayouts) {
      SCOPED_TRACE(case_name(t, l));
      std::vector<float> x = random_values(static_cast<size_t>(size), rng, 0.1f, 2.0f, false);
      std::vector<float> r = random_values(static_cast<size_t>(size), rng);
      quantize(x, t);
      quantize(r, t);
      DeviceMem dx = to_device(x, t), dres = to_device(r, t);
      DeviceMem ones = to_device(std::vector<float>(static_cast<size_t>(c), 1.0f), DType::F32);
      DeviceMem zeros = to_device(std::vector<float>(static_cast<size_t>(c), 0.0f), DType::F32);
      DeviceMem want(static_cast<size_t>(size) * dtype_size(t)), got(want.bytes()), got_res(want.bytes());
      DeviceMem dstep = to_device_raw(std::vector<uint64_t>{step});
      got.poison();
      got_res.poison();
      kernels::dropout_forward(dx.get(), want.get(), n, c, h, w, l, t, p, key, step, nullptr);
      kernels::BnApply a;
      a.x = dx.get();
      a.a = ones.as<float>();
      a.b = zeros.as<float>();
      a.dropout = kernels::BnDropout{p, key, step + 5, dstep.as<uint64_t>()};  // the device step wins
      a.y = got.get();
      const kernels::BnFusedShape s = shape_of(n, c, h, w, l, t);
      kernels::bn_apply_forward(s, a, nullptr);
      a.dropout.step_device = nullptr;
      a.dropout.step = step;
      a.residual = dres.get();
      a.y = got_res.get();
      kernels::bn_apply_forward(s, a, nullptr);
      const std::vector<float> dropped = download(want.get(), static_cast<size_t>(size), t);
      EXPECT_EQ(download(got.get(), static_cast<size_t>(size), t), dropped);
      std::vector<float> with_res(dropped.size());
      size_t kept = 0;
      for (size_t i = 0; i < dropped.size(); ++i) {
        with_res[i] = dropped[i] + r[i];
        kept += dropped[i] != 0.0f;
      }
      EXPECT_NEAR(static_cast<double>(kept) / size, 1.0 - p, 0.06);
      EXPECT_TRUE(all_close(download(got_res.get(), static_cast<size_t>(size), t), with_res,
                            t == DType::F32 ? 1e-6 : tolerance(t) / 4, max_abs(with_res)));
      // A shortcut convolution's bias, added with the residual in the same pass.
      const std::vector<float> bias = random_values(static_cast<size_t>(c), rng);
      DeviceMem dbias = to_device(bias, DType::F32);
      a.residual_bias = dbias.as<float>();
      got_res.poison();
      kernels::bn_apply_forward(s, a, nullptr);
      for (size_t i = 0; i < with_res.size(); ++i) {
        const int64_t at = static_cast<int64_t>(i);
        with_res[i] += bias[static_cast<size_t>(l == Layout::NHWC ? at % c : at / (h * w) % c)];
      }
      EXPECT_TRUE(all_close(download(got_res.get(), static_cast<size_t>(size), t), with_res,
                            t == DType::F32 ? 1e-6 : tolerance(t) / 4, max_abs(with_res)));
    }
}

// A bottleneck's end: y = relu(x * a + b + residual + bias), the ReLU after the sum, and with the residual
// scaled per channel, against a host reference, also on rows of 7 (NHWC walks them as one row of pixels).
TEST(KernelsBnFused, ApplyWithReluAfterTheResidual) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(45);
  for (Dims d : {Dims{3, 16, 4, 8}, Dims{4, 24, 7, 7}})
    for (DType t : kDtypes)
      for (Layout l : kLayouts) {
        const kernels::BnFusedShape s = shape_of(d.n, d.c, d.h, d.w, l, t);
        if (!kernels::bn_fused_supports(s, false, {})) continue;  // NCHW rows of 7
        SCOPED_TRACE(case_name(t, l) + " h " + std::to_string(d.h));
        const auto size = static_cast<size_t>(d.n * d.c * d.h * d.w), uc = static_cast<size_t>(d.c);
        std::vector<float> x = random_values(size, rng), r = random_values(size, rng);
        quantize(x, t);
        quantize(r, t);
        const std::vector<float> ca = random_values(uc, rng, 0.5f, 1.5f), cb = random_values(uc, rng, 0.1f, 0.5f);
        const std::vector<float> bias = random_values(uc, rng, 0.1f, 0.5f);
        DeviceMem dx = to_device(x, t), dres = to_device(r, t), got(size * dtype_size(t));
        DeviceMem da = to_device(ca, DType::F32), db = to_device(cb, DType::F32), dbias = to_device(bias, DType::F32);
        got.poison();
        kernels::BnApply a;
        a.x = dx.get();
        a.a = da.as<float>();
        a.b = db.as<float>();
        a.relu = true;
        a.relu_after_residual = true;
        a.residual = dres.get();
        a.residual_bias = dbias.as<float>();
        a.y = got.get();
        kernels::bn_apply_forward(s, a, nullptr);
        const int64_t plane = d.h * d.w;
        std::vector<float> want(size);
        size_t negative_sums = 0;
        for (size_t i = 0; i < size; ++i) {
          const auto at = static_cast<int64_t>(i);
          const size_t k = static_cast<size_t>(l == Layout::NHWC ? at % d.c : (at / plane) % d.c);
          const float sum = std::fma(x[i], ca[k], cb[k]) + r[i] + bias[k];
          negative_sums += sum < 0.0f && std::fma(x[i], ca[k], cb[k]) > 0.0f;
          want[i] = std::max(sum, 0.0f);
        }
        EXPECT_GT(negative_sums, 0u);  // the case where a ReLU before the add would differ
        EXPECT_TRUE(all_close(download(got.get(), size, t), want, t == DType::F32 ? 1e-6 : tolerance(t) / 4,
                              max_abs(want)));
        // A projection's end: the residual is the shortcut batch norm's input, normalised here by its
        // coefficients (residual_scale, residual_bias) in fp32, never stored.
        const std::vector<float> rs = random_values(uc, rng, 0.5f, 1.5f);
        DeviceMem drs = to_device(rs, DType::F32);
        a.residual_scale = drs.as<float>();
        got.poison();
        kernels::bn_apply_forward(s, a, nullptr);
        for (size_t i = 0; i < size; ++i) {
          const auto at = static_cast<int64_t>(i);
          const size_t k = static_cast<size_t>(l == Layout::NHWC ? at % d.c : (at / plane) % d.c);
          want[i] = std::max(std::fma(x[i], ca[k], cb[k]) + std::fma(r[i], rs[k], bias[k]), 0.0f);
        }
        EXPECT_TRUE(all_close(download(got.get(), size, t), want, t == DType::F32 ? 1e-6 : tolerance(t) / 4,
                              max_abs(want)))
            << "with the residual's scale";
      }
}

TEST(KernelsBnFused, SupportsNamesItsConditions) {
  float aligned[16] __attribute__((aligned(16)));
  const void* odd = reinterpret_cast<const char*>(aligned) + 4;
  EXPECT_TRUE(kernels::bn_fused_supports(shape_of(2, 16, 4, 8, Layout::NHWC, DType::BF16), true, {aligned}));
  EXPECT_FALSE(kernels::bn_fused_supports(shape_of(2, 12, 4, 8, Layout::NHWC, DType::BF16), false, {}));  // c % 8
  // w % 4 != 0: one row of n*h*w pixels, without dropout only, and n*h*w % 4 == 0.
  EXPECT_TRUE(kernels::bn_fused_supports(shape_of(2, 16, 4, 6, Layout::NHWC, DType::BF16), false, {aligned}));
  EXPECT_FALSE(kernels::bn_fused_supports(shape_of(2, 16, 4, 6, Layout::NHWC, DType::BF16), true, {}));
  EXPECT_TRUE(kernels::bn_fused_supports(shape_of(4, 16, 7, 7, Layout::NHWC, DType::BF16), false, {}));
  EXPECT_FALSE(kernels::bn_fused_supports(shape_of(2, 16, 7, 7, Layout::NHWC, DType::BF16), false, {}));
  EXPECT_FALSE(kernels::bn_fused_supports(shape_of(2, 16, 4, 8, Layout::NHWC, DType::BF16), false, {odd}));
  EXPECT_TRUE(kernels::bn_fused_supports(shape_of(2, 12, 2, 6, Layout::NCHW, DType::F32), true, {aligned}));
  EXPECT_FALSE(kernels::bn_fused_supports(shape_of(2, 12, 3, 5, Layout::NCHW, DType::F32), false, {}));  // h*w % 4
  EXPECT_FALSE(kernels::bn_fused_supports(shape_of(2, 12, 2, 6, Layout::NCHW, DType::F32), false, {odd}));
  EXPECT_FALSE(kernels::bn_fused_supports(shape_of(0, 16, 4, 8, Layout::NHWC, DType::F32), false, {}));
}

// One bit per element under NHWC, each at its own place within the buffer; none stored under NCHW.
TEST(KernelsBnFused, MaskBitsCoverEveryElementOnce) {
  const kernels::BnFusedShape s = shape_of(3, 24, 5, 12, Layout::NHWC, DType::BF16);
  const size_t bytes = kernels::bn_fused_mask_bytes(s);
  EXPECT_EQ(bytes, static_cast<size_t>(3 * 24 * 5 * 12 / 8));
  EXPECT_EQ(kernels::bn_fused_mask_bytes(shape_of(3, 24, 5, 12, Layout::NCHW, DType::BF16)), 0u);
  std::set<std::pair<int64_t, int>> seen;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t h = 0; h < s.h; ++h)
        for (int64_t w = 0; w < s.w; ++w) {
          const kernels::BnMaskBit b = kernels::bn_fused_mask_bit(s, n, c, h, w);
          ASSERT_GE(b.word, 0);
          ASSERT_LT(static_cast<size_t>(b.word), bytes / 4);
          ASSERT_TRUE(b.bit >= 0 && b.bit < 32);
          EXPECT_TRUE(seen.insert({b.word, b.bit}).second) << "n " << n << " c " << c << " h " << h << " w " << w;
        }
}

// The keep bits the apply pass stores are the dropout kernel's mask for every element, also for a slice
// of a batch (first_element > 0), and storing them changes nothing in y.
TEST(KernelsBnFused, ApplyStoresTheDropoutKernelsMaskAsBits) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(43);
  struct Case {
    int64_t n, c, h, w;
    uint64_t first_element;
  };
  const uint64_t key = 0x77aa55ull, step = 12;
  const double p = 0.4;
  for (Case k : {Case{3, 24, 5, 12, 0}, Case{2, 40, 3, 4, 4 * 37}, Case{1, 8, 1, 4, 0}, Case{2, 2064, 1, 4, 8}})
    for (DType t : kDtypes) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " c " + std::to_string(k.c));
      const kernels::BnFusedShape s = shape_of(k.n, k.c, k.h, k.w, Layout::NHWC, t);
      const int64_t size = k.n * k.c * k.h * k.w;
      std::vector<float> x = random_values(static_cast<size_t>(size), rng, 0.1f, 2.0f, false);
      quantize(x, t);
      DeviceMem dx = to_device(x, t);
      DeviceMem ones = to_device(std::vector<float>(static_cast<size_t>(k.c), 1.0f), DType::F32);
      DeviceMem zeros = to_device(std::vector<float>(static_cast<size_t>(k.c), 0.0f), DType::F32);
      DeviceMem want(static_cast<size_t>(size) * dtype_size(t)), drawn(want.bytes()), stored(want.bytes());
      DeviceMem bits(kernels::bn_fused_mask_bytes(s));
      bits.poison();  // every word must be written
      kernels::dropout_forward(dx.get(), want.get(), k.n, k.c, k.h, k.w, Layout::NHWC, t, p, key, step, nullptr,
                               nullptr, k.first_element);
      kernels::BnApply a;
      a.x = dx.get();
      a.a = ones.as<float>();
      a.b = zeros.as<float>();
      a.dropout = kernels::BnDropout{p, key, step, nullptr, k.first_element};
      a.y = drawn.get();
      kernels::bn_apply_forward(s, a, nullptr);
      a.dropout.keep_bits = bits.as<uint32_t>();
      a.y = stored.get();
      kernels::bn_apply_forward(s, a, nullptr);
      const std::vector<float> dropped = download(want.get(), static_cast<size_t>(size), t);
      EXPECT_EQ(download(drawn.get(), static_cast<size_t>(size), t), dropped);
      EXPECT_EQ(download(stored.get(), static_cast<size_t>(size), t), dropped);
      const std::vector<uint32_t> words = download_raw<uint32_t>(bits.get(), bits.bytes() / 4);
      int64_t wrong = 0, kept = 0;
      for (int64_t n = 0; n < k.n; ++n)
        for (int64_t c = 0; c < k.c; ++c)
          for (int64_t h = 0; h < k.h; ++h)
            for (int64_t w = 0; w < k.w; ++w) {
              const kernels::BnMaskBit b = kernels::bn_fused_mask_bit(s, n, c, h, w);
              const bool bit = (words[static_cast<size_t>(b.word)] >> b.bit) & 1u;
              const bool keeps = dropped[static_cast<size_t>(((n * k.h + h) * k.w + w) * k.c + c)] != 0.0f;
              wrong += bit != keeps;
              kept += keeps;
            }
      EXPECT_EQ(wrong, 0) << "of " << size << " keep bits differ from the dropout kernel's mask";
      EXPECT_NEAR(static_cast<double>(kept) / size, 1.0 - p, 0.1);
    }
}

// The backward passes against a double reference, given the forward's statistics and coefficients:
// g = dy * keep/(1-p) * [x*a + b > 0], dbias = sum g, dscale = sum g * (x - mean) * inv_std,
// dx = gamma * inv_std * (g - dbias/M - (x - mean) * inv_std^2 * sum g * (x - mean) / M). The same bits
// come from the stored keep bits as from drawing the mask, and from a second run.
TEST(KernelsBnFused, BackwardMatchesDoubleReferenceWithStoredOrDrawnMask) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(44);
  const uint64_t key = 0x5151ull, step = 3;
  for (Dims d : {Dims{3, 24, 5, 12}, Dims{2, 320, 4, 8}, Dims{512, 16, 32, 32}, Dims{2, 2064, 1, 4},
                 Dims{3, 16, 14, 14}, Dims{4, 24, 7, 7}})
    for (double p : {0.0, 0.3})
      for (DType t : kDtypes)
        for (Layout l : kLayouts) {
          SCOPED_TRACE(case_name(t, l) + " c " + std::to_string(d.c) + " h " + std::to_string(d.h) + " p " +
                       std::to_string(p));
          const kernels::BnFusedShape s = shape_of(d.n, d.c, d.h, d.w, l, t);
          if (!kernels::bn_fused_supports(s, p > 0, {})) {  // rows of 7: NHWC without dropout only
            EXPECT_TRUE(d.w % 4 != 0 && (p > 0 || l == Layout::NCHW));
            continue;
          }
          const int64_t plane = d.h * d.w, size = d.n * d.c * plane;
          const auto usize = static_cast<size_t>(size), uc = static_cast<size_t>(d.c);
          std::vector<float> x = random_values(usize, rng, 0.05f, 2.0f), dy = random_values(usize, rng, 0.05f, 1.0f);
          quantize(x, t);
          quantize(dy, t);
          std::vector<float> gamma = random_values(uc, rng, 0.5f, 1.5f), beta = random_values(uc, rng, 0.1f, 0.5f);
          DeviceMem dxin = to_device(x, t), ddy = to_device(dy, t), dout(usize * dtype_size(t));
          DeviceMem dgamma = to_device(gamma, DType::F32), dbeta = to_device(beta, DType::F32);
          DeviceMem running = to_device(std::vector<float>(2 * uc, 1.0f), DType::F32);
          DeviceMem state(4 * uc * 4), grads(2 * uc * 4), workspace(kernels::bn_fused_workspace_bytes(s));
          DeviceMem bits(kernels::bn_fused_mask_bytes(s));
          // The forward: statistics, coefficients, and (NHWC) the keep bits.
          const kernels::BnFinalize f = statistics_and_finalize(s, dxin, dgamma, dbeta, running, state, workspace);
          const kernels::BnDropout drawn{p, key, step};
          kernels::BnDropout stored = drawn;
          stored.keep_bits = p > 0 && bits.bytes() > 0 ? bits.as<uint32_t>() : nullptr;
          kernels::BnApply a;
          a.x = dxin.get();
          a.a = f.a;
          a.b = f.b;
          a.dropout = stored;
          a.y = dout.get();
          kernels::bn_apply_forward(s, a, nullptr);

          kernels::BnBackward b = backward_args(f, d.c, dxin.get(), ddy.get(), dout.get(), grads);
          struct Result {
            std::vector<float> dx, grads;
          };
          auto backward = [&](const kernels::BnDropout& dropout) {
            dout.poison();
            grads.poison();
            b.dropout = dropout;
            kernels::bn_backward_reduce(s, b, nullptr);
            kernels::bn_backward_dx(s, b, nullptr);
            return Result{download(dout.get(), usize, t), download(grads.get(), 2 * uc, DType::F32)};
          };
          const Result first = backward(stored);
          const Result again = backward(stored);
          const Result redrawn = backward(drawn);
          ASSERT_CUDA(cudaDeviceSynchronize());
          EXPECT_EQ(again.dx, first.dx);
          EXPECT_EQ(again.grads, first.grads);
          EXPECT_EQ(redrawn.dx, first.dx);
          EXPECT_EQ(redrawn.grads, first.grads);

          // The reference, in storage order, from the device's coefficients (the ReLU condition is a step).
          const std::vector<float> st = download(state.get(), 4 * uc, DType::F32);
          std::vector<float> keep(usize, 1.0f);
          if (p > 0) {
            DeviceMem all_ones = to_device(std::vector<float>(usize, 1.0f), t), mask(usize * dtype_size(t));
            kernels::dropout_forward(all_ones.get(), mask.get(), d.n, d.c, d.h, d.w, l, t, p, key, step, nullptr);
            keep = download(mask.get(), usize, t);  // 1/(1-p) where kept, 0 where dropped
          }
          const float drop_scale = static_cast<float>(1.0 / (1.0 - p));
          auto channel = [&](int64_t i) {
            return static_cast<size_t>(l == Layout::NHWC ? i % d.c : (i / plane) % d.c);
          };
          std::vector<float> g(usize);
          std::vector<double> s1(uc, 0.0), s2(uc, 0.0);
          for (int64_t i = 0; i < size; ++i) {
            const size_t k = channel(i), u = static_cast<size_t>(i);
            float gi = dy[u];
            if (p > 0) gi = keep[u] != 0.0f ? gi * drop_scale : 0.0f;
            if (!(std::fma(x[u], st[2 * uc + k], st[3 * uc + k]) > 0.0f)) gi = 0.0f;
            g[u] = gi;
            s1[k] += gi;
            s2[k] += static_cast<double>(gi) * (static_cast<double>(x[u]) - st[k]);
          }
          const double count = static_cast<double>(d.n * plane);
          std::vector<float> want_dx(usize), want_grads(2 * uc);
          for (size_t k = 0; k < uc; ++k) {
            want_grads[k] = static_cast<float>(s2[k] * st[uc + k]);
            want_grads[uc + k] = static_cast<float>(s1[k]);
          }
          for (int64_t i = 0; i < size; ++i) {
            const size_t k = channel(i), u = static_cast<size_t>(i);
            const double inv = st[uc + k], k1 = gamma[k] * inv;
            want_dx[u] = static_cast<float>(k1 * (g[u] - s1[k] / count - (x[u] - st[k]) * inv * inv * s2[k] / count));
          }
          EXPECT_TRUE(all_close(first.grads, want_grads, 1e-3, max_abs(want_grads)));
          EXPECT_TRUE(all_close(first.dx, want_dx, t == DType::F32 ? 1e-4 : tolerance(t), 1e-2 * max_abs(want_dx)));
        }
}

// A batch norm in training on the device: gamma and beta drawn from rng, running statistics 1, finalized
// from x's statistics (f).
struct TrainingBatchNorm {
  DeviceMem gamma, beta, running, state, workspace;
  kernels::BnFinalize f;
  TrainingBatchNorm(const kernels::BnFusedShape& s, const DeviceMem& x, std::mt19937_64& rng)
      : gamma(to_device(random_values(static_cast<size_t>(s.c), rng, 0.5f, 1.5f), DType::F32)),
        beta(to_device(random_values(static_cast<size_t>(s.c), rng, -0.5f, 0.5f), DType::F32)),
        running(to_device(std::vector<float>(static_cast<size_t>(2 * s.c), 1.0f), DType::F32)),
        state(static_cast<size_t>(4 * s.c) * 4),
        workspace(kernels::bn_fused_workspace_bytes(s)),
        f(statistics_and_finalize(s, x, gamma, beta, running, state, workspace)) {}
};

// The shapes of a bottleneck's end: odd rows, rows of 7 (walked as one row of pixels), many rows of partial
// sums, more than 256 channel groups.
struct BottleneckEnd {
  int64_t n, c, h, w;
};
constexpr BottleneckEnd kBottleneckEnds[] = {{3, 24, 5, 12}, {4, 24, 7, 7}, {64, 64, 16, 16}, {2, 2064, 1, 4}};

// A bottleneck's end, y = relu(x * a + b + residual), storing which outputs are positive.
kernels::BnApply bottleneck_end(const TrainingBatchNorm& bn, const DeviceMem& x, const DeviceMem& residual,
                                DeviceMem& y, DeviceMem& bits) {
  kernels::BnApply a;
  a.x = x.get();
  a.a = bn.f.a;
  a.b = bn.f.b;
  a.relu = true;
  a.relu_after_residual = true;
  a.residual = residual.get();
  a.y = y.get();
  a.relu_bits = bits.as<uint32_t>();
  return a;
}

// A bottleneck's end, y = relu(bn(x) + residual): the apply pass storing which outputs are positive
// (relu_bits, checked against y), and the first backward pass masking dy by those bits in place
// (relu_output_bits) against relu_backward followed by the plain passes. The masked dy is the same bits; the
// masking pass sums over its own grid, so dscale, dbias and dx agree to the summation order; and a second
// run gives the same bits. Rows of 7 are walked as one row of pixels.
TEST(KernelsBnFused, BackwardMasksTheFollowingRelu) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(46);
  for (const BottleneckEnd& d : kBottleneckEnds)
    for (DType t : kDtypes) {
      SCOPED_TRACE(case_name(t, Layout::NHWC) + " c " + std::to_string(d.c) + " h " + std::to_string(d.h));
      const kernels::BnFusedShape s = shape_of(d.n, d.c, d.h, d.w, Layout::NHWC, t);
      ASSERT_TRUE(kernels::bn_fused_supports(s, false, {}));
      const auto size = static_cast<size_t>(d.n * d.c * d.h * d.w), uc = static_cast<size_t>(d.c);
      std::vector<float> x = random_values(size, rng, -1.0f, 2.0f), r = random_values(size, rng, -1.0f, 1.0f);
      std::vector<float> dy = random_values(size, rng, -1.0f, 1.0f);
      quantize(x, t);
      quantize(r, t);
      quantize(dy, t);
      DeviceMem dxin = to_device(x, t), dres = to_device(r, t), dout(size * dtype_size(t));
      DeviceMem bits(kernels::bn_fused_mask_bytes(s));
      const TrainingBatchNorm bn(s, dxin, rng);
      const kernels::BnFinalize& f = bn.f;
      kernels::bn_apply_forward(s, bottleneck_end(bn, dxin, dres, dout, bits), nullptr);
      {  // the bits say which stored outputs are positive (NHWC storage order is the logical (n, h, w, c))
        const std::vector<float> y = download(dout.get(), size, t);
        std::vector<uint32_t> words(kernels::bn_fused_mask_bytes(s) / 4);
        ASSERT_CUDA(cudaMemcpy(words.data(), bits.get(), words.size() * 4, cudaMemcpyDeviceToHost));
        size_t wrong = 0;
        for (int64_t n = 0; n < d.n; ++n)
          for (int64_t h = 0; h < d.h; ++h)
            for (int64_t w = 0; w < d.w; ++w)
              for (int64_t ch = 0; ch < d.c; ++ch) {
                const int64_t pixel = (n * d.h + h) * d.w + w;
                // the passes walk rows of 7 as one row of pixels: an item is 4 pixels in memory order
                const kernels::BnMaskBit at{(pixel / 4) * (d.c / 8) + ch / 8, static_cast<int>((pixel % 4) * 8 + ch % 8)};
                const bool positive = y[static_cast<size_t>(pixel * d.c + ch)] > 0.0f;
                wrong += positive != (((words[static_cast<size_t>(at.word)] >> at.bit) & 1u) != 0);
              }
        EXPECT_EQ(wrong, 0u);
      }

      struct Result {
        std::vector<float> masked_dy, dx, grads;
      };
      auto backward = [&](bool in_pass) {
        DeviceMem g = to_device(dy, t), dx(size * dtype_size(t)), grads(2 * uc * 4);
        dx.poison();
        grads.poison();
        kernels::BnBackward b = backward_args(f, d.c, dxin.get(), g.get(), dx.get(), grads);
        b.relu = false;
        if (in_pass) {
          b.relu_output_bits = bits.as<uint32_t>();
          b.dy_in_place = g.get();
        } else {
          kernels::relu_backward(dout.get(), g.get(), g.get(), static_cast<int64_t>(size), t, nullptr);
        }
        kernels::bn_backward_reduce(s, b, nullptr);
        kernels::bn_backward_dx(s, b, nullptr);
        return Result{download(g.get(), size, t), download(dx.get(), size, t), download(grads.get(), 2 * uc, DType::F32)};
      };
      const Result layer = backward(false), fused = backward(true), again = backward(true);
      ASSERT_CUDA(cudaDeviceSynchronize());
      EXPECT_EQ(fused.masked_dy, layer.masked_dy);
      size_t zeroed = 0;
      for (size_t i = 0; i < size; ++i) zeroed += layer.masked_dy[i] == 0.0f && dy[i] != 0.0f;
      EXPECT_GT(zeroed, size / 8);  // the mask has work to do
      EXPECT_EQ(again.masked_dy, fused.masked_dy);
      EXPECT_EQ(again.dx, fused.dx);
      EXPECT_EQ(again.grads, fused.grads);
      EXPECT_TRUE(all_close(fused.grads, layer.grads, 1e-5, max_abs(layer.grads)));
      EXPECT_TRUE(all_close(fused.dx, layer.dx, t == DType::F32 ? 1e-5 : tolerance(t), 1e-3 * max_abs(layer.dx)));
    }
}

// A projection block's end, y = relu(bn(x) + bn_s(x_s)), with the shortcut's batch norm applied in the add
// (residual_scale): both batch norms' backward as a pair against the separate passes (the shortcut's
// masking dy in place, then the main one's on the masked dy). The shortcut's dx and gradients are the same
// bits (the same grid and order), the main one's agree to the summation order; dy is not written; a second
// run gives the same bits, and so does one that writes main's dx over dy.
TEST(KernelsBnFused, PairBackwardMatchesTheSeparatePasses) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(47);
  for (const BottleneckEnd& d : kBottleneckEnds)
    for (DType t : kDtypes) {
      SCOPED_TRACE(case_name(t, Layout::NHWC) + " c " + std::to_string(d.c) + " h " + std::to_string(d.h));
      const kernels::BnFusedShape s = shape_of(d.n, d.c, d.h, d.w, Layout::NHWC, t);
      const auto size = static_cast<size_t>(d.n * d.c * d.h * d.w), uc = static_cast<size_t>(d.c);
      std::vector<float> x = random_values(size, rng, -1.0f, 2.0f), xs = random_values(size, rng, -2.0f, 1.0f);
      std::vector<float> dy = random_values(size, rng, -1.0f, 1.0f);
      quantize(x, t);
      quantize(xs, t);
      quantize(dy, t);
      DeviceMem dxin = to_device(x, t), dxs = to_device(xs, t), dout(size * dtype_size(t));
      DeviceMem bits(kernels::bn_fused_mask_bytes(s));
      const TrainingBatchNorm bn(s, dxin, rng), bn_s(s, dxs, rng);
      const kernels::BnFinalize &f = bn.f, &fs = bn_s.f;
      kernels::BnApply a = bottleneck_end(bn, dxin, dxs, dout, bits);
      a.residual_scale = fs.a;  // the shortcut's batch norm, applied in the add
      a.residual_bias = fs.b;
      kernels::bn_apply_forward(s, a, nullptr);

      struct Result {
        std::vector<float> dy_after, dx, grads, dx_s, grads_s;
      };
      // pair: the pair's passes; in_place: with main's dx written over dy.
      auto backward = [&](bool pair, bool in_place = false) {
        DeviceMem g = to_device(dy, t), dx(size * dtype_size(t)), dx_s(size * dtype_size(t));
        DeviceMem grads(2 * uc * 4), grads_s(2 * uc * 4);
        for (DeviceMem* m : {&dx, &dx_s, &grads, &grads_s}) m->poison();
        kernels::BnBackward m = backward_args(f, d.c, dxin.get(), g.get(), in_place ? g.get() : dx.get(), grads);
        kernels::BnBackward sc = backward_args(fs, d.c, dxs.get(), g.get(), dx_s.get(), grads_s);
        m.relu = sc.relu = false;
        if (pair) {
          m.relu_output_bits = bits.as<uint32_t>();
          kernels::bn_backward_pair_reduce(s, m, sc, nullptr);
          kernels::bn_backward_pair_dx(s, m, sc, nullptr);
        } else {
          sc.relu_output_bits = bits.as<uint32_t>();
          sc.dy_in_place = g.get();
          kernels::bn_backward_reduce(s, sc, nullptr);
          kernels::bn_backward_dx(s, sc, nullptr);
          kernels::bn_backward_reduce(s, m, nullptr);
          kernels::bn_backward_dx(s, m, nullptr);
        }
        return Result{download(g.get(), size, t), download(in_place ? g.get() : dx.get(), size, t),
                      download(grads.get(), 2 * uc, DType::F32), download(dx_s.get(), size, t),
                      download(grads_s.get(), 2 * uc, DType::F32)};
      };
      const Result separate = backward(false), pair = backward(true), again = backward(true);
      const Result in_place = backward(true, true);
      ASSERT_CUDA(cudaDeviceSynchronize());
      EXPECT_EQ(pair.dy_after, dy);  // read, never written
      size_t zeroed = 0;
      for (size_t i = 0; i < size; ++i) zeroed += separate.dy_after[i] == 0.0f && dy[i] != 0.0f;
      EXPECT_GT(zeroed, size / 8);  // the mask has work to do
      EXPECT_EQ(pair.dx_s, separate.dx_s);
      EXPECT_EQ(pair.grads_s, separate.grads_s);
      EXPECT_TRUE(all_close(pair.grads, separate.grads, 1e-5, max_abs(separate.grads)));
      EXPECT_TRUE(all_close(pair.dx, separate.dx, t == DType::F32 ? 1e-5 : tolerance(t), 1e-3 * max_abs(separate.dx)));
      EXPECT_EQ(again.dx, pair.dx);
      EXPECT_EQ(again.grads, pair.grads);
      EXPECT_EQ(again.dx_s, pair.dx_s);
      EXPECT_EQ(in_place.dx, pair.dx);  // main's dx over dy: the same bits
      EXPECT_EQ(in_place.dx_s, pair.dx_s);
      EXPECT_EQ(in_place.grads, pair.grads);
    }
}

}  // namespace
