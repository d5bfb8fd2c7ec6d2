// Linear y = x W^T + b through BLAS.
#pragma once
#include "nn/cpu/layer.h"
#include "nn/spec.h"

namespace sb::cpu {

template <typename T>
class Linear final : public Layer<T> {
 public:
  explicit Linear(const LayerSpec& spec);
  void bind(T* params, T* grads, T* buffers) override;
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;

 private:
  LayerSpec spec_;
  // (implementation state)
};

}  // namespace sb::cpu
