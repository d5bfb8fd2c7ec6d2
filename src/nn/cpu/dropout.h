// Dropout with a counter-based Philox mask, so that the CUDA path draws exactly the same mask:
// element i of the output is kept when philox_uniform_at(key', step, i) >= p, where key' mixes the
// stream key with a hash of the layer's name (see dropout_mask_key). Kept elements are scaled by 1/(1-p).
// In Eval mode, or with p == 0, it is the identity.
#pragma once
#include <cstdint>
#include <string>

#include "nn/cpu/layer.h"
#include "nn/spec.h"

namespace sb {
// The Philox key of one dropout layer for a stream key (shared with the CUDA path).
uint64_t dropout_mask_key(uint64_t stream_key, const std::string& layer_name);
}  // namespace sb

namespace sb::cpu {

template <typename T>
class Dropout final : public Layer<T> {
 public:
  explicit Dropout(const LayerSpec& spec);
  void set_random_stream(uint64_t key, uint64_t step) override;
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;
};

}  // namespace sb::cpu
