// BatchNorm2d as in PyTorch: batch statistics in Train mode (biased variance for normalising, unbiased
// for the running update, momentum 0.1, eps 1e-5), running statistics in Eval mode.
#pragma once
#include <vector>

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
  const T* weight_ = nullptr;  // gamma [C]
  const T* bias_ = nullptr;    // beta [C]
  T* weight_grad_ = nullptr;
  T* bias_grad_ = nullptr;
  T* running_mean_ = nullptr;  // [C], updated in Train mode, used in Eval mode
  T* running_var_ = nullptr;   // [C]
  // What backward needs from the last forward: the normalised input, 1/sqrt(var + eps) per channel and
  // whether the statistics came from the batch (whose gradient flows through the mean and variance).
  bool have_forward_ = false;
  Mode mode_ = Mode::Train;
  Tensor<T> x_hat_;
  std::vector<double> inv_std_;
  Tensor<T> y_, dx_;
};

}  // namespace sb::cpu
