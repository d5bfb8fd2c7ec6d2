// BatchNorm2d as in PyTorch: batch statistics in Train mode (biased variance for normalising, unbiased for the running update, momentum 0.1, eps 1e-5), running statistics in Eval mode.
#pragma once
#include "nn/cpu/layer.h"
#include "nn/spec.h"

namespace sb::cpu {

template <typename T>
class BatchNorm2d final : public Layer<T> {
 public:
  explicit BatchNorm2d(const LayerSpec& spec);
  void bind(T* params, T* grads, T* buffers) override;
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;

 private:
  LayerSpec spec_;
  // (implementation state)
};

}  // namespace sb::cpu
