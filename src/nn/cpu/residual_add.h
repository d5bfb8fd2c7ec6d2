// The residual add: out = a + b, elementwise, shapes equal.
#pragma once
#include "core/error.h"
#include "core/tensor.h"

namespace sb::cpu {
template <typename T>
void residual_add(const Tensor<T>& a, const Tensor<T>& b, Tensor<T>& out) {
  if (a.shape() != b.shape()) fatal("residual_add: shapes " + a.shape().str() + " and " + b.shape().str() + " differ");
  out.resize(a.shape());
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
}  // namespace sb::cpu
