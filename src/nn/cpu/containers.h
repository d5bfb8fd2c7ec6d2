// Sequential and residual containers over CPU layers.
#pragma once
#include <memory>
#include <vector>

#include "nn/cpu/layer.h"
#include "nn/spec.h"

namespace sb::cpu {

// What both containers share: their children, built from the specs in order, bound to consecutive
// spans of the flat buffers and keyed alike.
template <typename T>
class Container : public Layer<T> {
 public:
  void bind(T* params, T* grads, T* buffers) override;
  void set_random_stream(uint64_t key, uint64_t step) override;
  void set_first_sample(int64_t first) override;

 protected:
  explicit Container(std::vector<LayerSpec> child_specs);

  std::vector<LayerSpec> child_specs_;
  std::vector<std::unique_ptr<Layer<T>>> children_;
};

template <typename T>
class Sequential final : public Container<T> {
 public:
  explicit Sequential(const LayerSpec& spec);
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;
};

// y = main(x) + shortcut(x), with an identity shortcut when the spec has none: children main and, if
// the spec has one, shortcut.
template <typename T>
class Residual final : public Container<T> {
 public:
  explicit Residual(const LayerSpec& spec);
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;

 private:
  Tensor<T> y_, dx_;
};

}  // namespace sb::cpu
