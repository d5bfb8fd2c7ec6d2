// Sequential and residual containers over CPU layers.
#pragma once
#include <memory>
#include <vector>

#include "nn/cpu/layer.h"
#include "nn/spec.h"

namespace sb::cpu {

template <typename T>
class Sequential final : public Layer<T> {
 public:
  explicit Sequential(const LayerSpec& spec);
  void bind(T* params, T* grads, T* buffers) override;
  void set_random_stream(uint64_t key, uint64_t step) override;
  void set_first_sample(int64_t first) override;
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;

 private:
  std::vector<LayerSpec> child_specs_;
  std::vector<std::unique_ptr<Layer<T>>> children_;
};

// y = main(x) + shortcut(x), with an identity shortcut when the spec has none.
template <typename T>
class Residual final : public Layer<T> {
 public:
  explicit Residual(const LayerSpec& spec);
  void bind(T* params, T* grads, T* buffers) override;
  void set_random_stream(uint64_t key, uint64_t step) override;
  void set_first_sample(int64_t first) override;
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;

 private:
  LayerSpec main_spec_;
  std::unique_ptr<Layer<T>> main_, shortcut_;
  Tensor<T> y_, dx_;
};

}  // namespace sb::cpu
