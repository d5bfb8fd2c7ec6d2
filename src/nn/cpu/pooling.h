// MaxPool2d, AvgPool2d (no padding, floor mode) and global average pooling.
#pragma once
#include "nn/cpu/layer.h"
#include "nn/spec.h"

namespace sb::cpu {

template <typename T>
class MaxPool2d final : public Layer<T> {
 public:
  explicit MaxPool2d(const LayerSpec& spec);
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;
};

template <typename T>
class AvgPool2d final : public Layer<T> {
 public:
  explicit AvgPool2d(const LayerSpec& spec);
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;
};

// N,C,H,W -> N,C,1,1: the mean over each channel's H x W.
template <typename T>
class GlobalAvgPool final : public Layer<T> {
 public:
  explicit GlobalAvgPool(const LayerSpec& spec);
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;
};

}  // namespace sb::cpu
