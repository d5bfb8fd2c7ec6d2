// A CPU network instantiated from a spec, over flat parameter, gradient and buffer vectors.
#pragma once
#include <memory>
#include <vector>

#include "nn/cpu/layer.h"
#include "nn/spec.h"

namespace sb::cpu {

template <typename T>
class Network {
 public:
  // Builds the layers, allocates the flat buffers and initialises them from the seed (PyTorch defaults).
  Network(LayerSpec spec, uint64_t seed);

  const LayerSpec& spec() const { return spec_; }
  const std::vector<ParamSpec>& param_specs() const { return param_specs_; }
  const std::vector<ParamSpec>& buffer_specs() const { return buffer_specs_; }
  std::vector<T>& params() { return params_; }
  std::vector<T>& grads() { return grads_; }
  std::vector<T>& buffers() { return buffers_; }
  const std::vector<T>& params() const { return params_; }
  const std::vector<T>& grads() const { return grads_; }
  const std::vector<T>& buffers() const { return buffers_; }

  void set_random_stream(uint64_t key, uint64_t step) { root_->set_random_stream(key, step); }
  void set_first_sample(int64_t first) { root_->set_first_sample(first); }
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) { return root_->forward(x, mode); }
  // Writes every parameter gradient for the last forward; returns the input gradient.
  const Tensor<T>& backward(const Tensor<T>& dy) { return root_->backward(dy); }

 private:
  LayerSpec spec_;
  std::vector<ParamSpec> param_specs_, buffer_specs_;
  std::vector<T> params_, grads_, buffers_;
  std::unique_ptr<Layer<T>> root_;
};

}  // namespace sb::cpu
