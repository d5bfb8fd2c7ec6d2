// Shape-preserving or reshaping layers without parameters: ReLU, Flatten, LogSoftmax (over dim 1).
#pragma once
#include "nn/cpu/layer.h"
#include "nn/spec.h"

namespace sb::cpu {

template <typename T>
class ReLU final : public Layer<T> {
 public:
  explicit ReLU(const LayerSpec& spec);
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;
};

template <typename T>
class Flatten final : public Layer<T> {
 public:
  explicit Flatten(const LayerSpec& spec);
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;
};

template <typename T>
class LogSoftmax final : public Layer<T> {
 public:
  explicit LogSoftmax(const LayerSpec& spec);
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;
};

}  // namespace sb::cpu
