// MaxPool2d (padding as PyTorch's: padded cells never win), AvgPool2d (no padding), both in floor mode,
// and global average pooling.
#pragma once
#include <vector>

#include "nn/cpu/layer.h"
#include "nn/spec.h"

namespace sb::cpu {

// On ties the first maximum in row-major window order takes the gradient, as in PyTorch.
template <typename T>
class MaxPool2d final : public Layer<T> {
 public:
  explicit MaxPool2d(const LayerSpec& spec);
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;

 private:
  int64_t kernel_, stride_, pad_;
  Shape input_shape_;
  std::vector<int64_t> argmax_;  // per output element, the flat index of its maximum in the input
  Tensor<T> y_, dx_;
};

template <typename T>
class AvgPool2d final : public Layer<T> {
 public:
  explicit AvgPool2d(const LayerSpec& spec);
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;

 private:
  int64_t kernel_, stride_;
  Shape input_shape_;
  Tensor<T> y_, dx_;
};

// N,C,H,W -> N,C,1,1: the mean over each channel's H x W.
template <typename T>
class GlobalAvgPool final : public Layer<T> {
 public:
  explicit GlobalAvgPool(const LayerSpec& spec);
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;

 private:
  Shape input_shape_;
  Tensor<T> y_, dx_;
};

}  // namespace sb::cpu
