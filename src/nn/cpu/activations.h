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

 private:
  Tensor<T> y_, dx_;  // y > 0 exactly where x > 0, so backward needs only y
};

template <typename T>
class Flatten final : public Layer<T> {
 public:
  explicit Flatten(const LayerSpec& spec);
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;

 private:
  Shape input_shape_;
  Tensor<T> y_, dx_;
};

template <typename T>
class LogSoftmax final : public Layer<T> {
 public:
  explicit LogSoftmax(const LayerSpec& spec);
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;

 private:
  Tensor<T> y_, dx_;  // backward uses softmax = exp(y)
};

}  // namespace sb::cpu
