// How far two computations of the same sums of products may differ, whatever order the BLAS kernels add
// in. A sum of n products computed in floating point in any order, with or without fused multiply-add, is
// within gamma(n) * sum |a_i b_i| of the exact sum, gamma(n) = n u / (1 - n u) (Higham, Accuracy and
// Stability of Numerical Algorithms, section 3.1). The order is the kernels' choice and differs from CPU
// to CPU, so the layer tests allow each element the two computations' bounds, never a fixed number.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace sb::testing {

inline constexpr double kFloatUnit = 0x1p-24;
inline constexpr double kDoubleUnit = 0x1p-53;

inline double gamma_bound(int64_t n, double unit) {
  const double nu = static_cast<double>(n) * unit;
  return nu / (1.0 - nu);
}

// Per unit of sum |a_i b_i|: fp32 from operands rounded to fp32 (two more roundings per product) against
// double.
inline double float_against_double(int64_t terms) {
  return gamma_bound(terms + 2, kFloatUnit) + gamma_bound(terms, kDoubleUnit);
}
// Per unit of sum |a_i b_i|: two double computations in different orders.
inline double double_against_double(int64_t terms) { return 2 * gamma_bound(terms, kDoubleUnit); }

inline Tensor<double> absolute(const Tensor<double>& t) {
  Tensor<double> out(t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = std::fabs(t[i]);
  return out;
}
inline std::vector<double> absolute(const std::vector<double>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = std::fabs(v[i]);
  return out;
}

// Every got[i] within per_magnitude * magnitude[i] of want[i], where magnitude[i] is the element's
// sum |a_j b_j| (the same sums over the operands' absolute values). Names the first element outside.
template <typename Got>
::testing::AssertionResult within_rounding(const Got* got, const double* want, const double* magnitude, int64_t count,
                                           double per_magnitude) {
  for (int64_t i = 0; i < count; ++i) {
    const double allowed = per_magnitude * magnitude[i];
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= allowed)) {
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs " << want[i] << ", allowed "
                                           << allowed << " (sum of |terms| " << magnitude[i] << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace sb::testing
