// Finite-difference gradient checks in double precision, shared by the layer and model tests.
// The scalar loss is L = sum(r * y) for a fixed random r, so dL/dy = r.
//
// A difference quotient (up - down) / 2h carries the two loss evaluations' rounding over 2h, and that
// rounding follows the order the BLAS kernels add in, which differs from CPU to CPU. So besides the
// relative tolerance, an element passes within the measured reach of that rounding (rounding_noise).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "nn/cpu/layer.h"

namespace sb::testing {

inline Tensor<double> random_tensor(const Shape& shape, std::mt19937_64& rng, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor<double> t(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = u(rng);
  return t;
}

inline double dot(const Tensor<double>& a, const Tensor<double>& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a[i] * b[i];
  return s;
}

// max |a-b| / max(1, |b|) style error that tolerates tiny gradients.
inline double relative_error(double analytic, double numeric) {
  return std::fabs(analytic - numeric) / std::max(1e-6, std::fabs(analytic) + std::fabs(numeric));
}

// How far two double evaluations of `loss` at nearby points round apart: moving one of `values` by a
// billionth of itself changes the loss by gradient * move to first order (the second order cancels in
// the central form) and rounds every downstream operation anew; the largest remainder over a few probes.
inline double rounding_noise(const std::function<double()>& loss, double* values, const double* gradient, int64_t n) {
  constexpr int kProbes = 16;
  std::mt19937_64 rng(static_cast<uint64_t>(n));  // its own draws: the caller's sampling stays as it was
  std::uniform_int_distribution<int64_t> pick(0, n - 1);
  double noise = 0;
  for (int k = 0; k < kProbes; ++k) {
    const int64_t i = pick(rng);
    const double saved = values[i];
    const double move = 1e-9 * std::max(std::fabs(saved), 1e-3);
    values[i] = saved + move;
    const double up = loss();
    values[i] = saved - move;
    const double down = loss();
    values[i] = saved;
    noise = std::max(noise, std::fabs(up - down - 2 * move * gradient[i]));
  }
  return noise;
}

// The analytic gradient agrees with the difference quotient of step h to `tolerance`, or within ten
// times the rounding noise's reach over the quotient (noise / 2h; one quotient was seen at twice the
// largest probe): a bug is off by far more than either.
inline bool gradient_agrees(double analytic, double numeric, double tolerance, double noise, double h) {
  return relative_error(analytic, numeric) < tolerance || std::fabs(analytic - numeric) <= 10 * noise / (2 * h);
}

struct GradCheckOptions {
  double step = 1e-6;
  double tolerance = 1e-6;      // per-element relative error
  int max_checks_per_tensor = 64;  // sampled elements for big tensors
};

// Checks dL/dx and every parameter gradient of `layer` (already bound to params/grads) against central
// differences. `forward` must be deterministic for a given input (e.g. dropout keyed identically).
inline void check_layer_gradients(cpu::Layer<double>& layer, const Tensor<double>& x, double* params,
                                  const double* grads, int64_t n_params, std::mt19937_64& rng,
                                  cpu::Mode mode = cpu::Mode::Train, GradCheckOptions opt = {}) {
  Tensor<double> input = x;
  const Tensor<double>& y0 = layer.forward(input, mode);
  const Tensor<double> r = random_tensor(y0.shape(), rng);
  const Tensor<double> dx = layer.backward(r);
  ASSERT_EQ(dx.shape(), input.shape());
  const std::vector<double> dparams(grads, grads + n_params);

  auto loss = [&]() { return dot(layer.forward(input, mode), r); };
  auto sample = [&](int64_t n) {
    std::vector<int64_t> idx;
    if (n <= opt.max_checks_per_tensor) {
      for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    } else {
      std::uniform_int_distribution<int64_t> u(0, n - 1);
      for (int i = 0; i < opt.max_checks_per_tensor; ++i) idx.push_back(u(rng));
    }
    return idx;
  };
  const double input_noise = rounding_noise(loss, input.data(), dx.data(), input.numel());
  for (int64_t i : sample(input.numel())) {
    const double saved = input[i];
    input[i] = saved + opt.step;
    const double up = loss();
    input[i] = saved - opt.step;
    const double down = loss();
    input[i] = saved;
    const double numeric = (up - down) / (2 * opt.step);
    EXPECT_TRUE(gradient_agrees(dx[i], numeric, opt.tolerance, input_noise, opt.step))
        << "dx[" << i << "] analytic " << dx[i] << " numeric " << numeric << " (loss rounding noise " << input_noise << ")";
  }
  const double param_noise = n_params > 0 ? rounding_noise(loss, params, dparams.data(), n_params) : 0.0;
  for (int64_t i : sample(n_params)) {
    const double saved = params[i];
    params[i] = saved + opt.step;
    const double up = loss();
    params[i] = saved - opt.step;
    const double down = loss();
    params[i] = saved;
    const double numeric = (up - down) / (2 * opt.step);
    EXPECT_TRUE(gradient_agrees(dparams[i], numeric, opt.tolerance, param_noise, opt.step))
        << "dparam[" << i << "] analytic " << dparams[i] << " numeric " << numeric << " (loss rounding noise " << param_noise << ")";
  }
}

}  // namespace sb::testing
