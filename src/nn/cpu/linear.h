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
  const T* weight_ = nullptr;  // [out, in]
  const T* bias_ = nullptr;    // [out], or null without bias
  T* weight_grad_ = nullptr;
  T* bias_grad_ = nullptr;
  const Tensor<T>* x_ = nullptr;  // the last forward's input, needed for dW
  Tensor<T> y_, dx_;
};

}  // namespace sb::cpu
