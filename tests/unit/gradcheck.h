// Finite-difference gradient checks in double precision, shared by the layer and model tests.
// The scalar loss is L = sum(r * y) for a fixed random r, so dL/dy = r.
#pragma once
#include <gtest/gtest.h>

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
  for (int64_t i : sample(input.numel())) {
    const double saved = input[i];
    input[i] = saved + opt.step;
    const double up = loss();
    input[i] = saved - opt.step;
    const double down = loss();
    input[i] = saved;
    const double numeric = (up - down) / (2 * opt.step);
    EXPECT_LT(relative_error(dx[i], numeric), opt.tolerance) << "dx[" << i << "] analytic " << dx[i] << " numeric " << numeric;
  }
  for (int64_t i : sample(n_params)) {
    const double saved = params[i];
    params[i] = saved + opt.step;
    const double up = loss();
    params[i] = saved - opt.step;
    const double down = loss();
    params[i] = saved;
    const double numeric = (up - down) / (2 * opt.step);
    EXPECT_LT(relative_error(dparams[i], numeric), opt.tolerance)
        << "dparam[" << i << "] analytic " << dparams[i] << " numeric " << numeric;
  }
}

}  // namespace sb::testing
