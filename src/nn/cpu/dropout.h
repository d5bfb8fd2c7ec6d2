// Dropout with a counter-based Philox mask, so that the CUDA path draws exactly the same mask:
// element i of the output is kept when philox_uniform_at(key', step, i) >= p (i counted from the whole
// batch's first sample, see Layer::set_first_sample), where key' mixes the
// stream key with a hash of the layer's name (see dropout_mask_key). Kept elements are scaled by 1/(1-p).
// In Eval mode, or with p == 0, it is the identity.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nn/cpu/layer.h"
#include "nn/spec.h"

namespace sb {
// The Philox key of one dropout layer for a stream key (shared with the CUDA path):
//   h   = FNV-1a 64 of the name's bytes (offset basis 0xcbf29ce484222325, prime 0x100000001b3)
//   z   = stream_key ^ h
//   key = splitmix64's finaliser of z: z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27;
//         z *= 0x94d049bb133111eb; z ^= z >> 31.
// Layers with different names get unrelated masks in the same step; the CUDA path computes the key
// on the host with this same function.
uint64_t dropout_mask_key(uint64_t stream_key, const std::string& layer_name);

// Whether dropout keeps element i: the exact comparison of philox_uniform_at(mask_key, step, i) (a
// multiple of 2^-24) with the double p. A float-rounded p could flip elements at the boundary, so the
// CUDA path compares in double too (or, equivalently, bits >> 8 >= ceil(p * 2^24)).
bool dropout_keeps(uint64_t mask_key, uint64_t step, uint64_t i, double p);

// The mask index of element 0 of a slice of the whole batch that begins at sample first_sample (x's shape
// is the slice's, batch axis first). The GPU draws masks 4 elements at a time, so the index must be a
// multiple of 4 on both backends; throws UserError naming the layer otherwise.
uint64_t slice_mask_offset(const std::string& layer_name, const Shape& shape, int64_t first_sample);
}  // namespace sb

namespace sb::cpu {

template <typename T>
class Dropout final : public Layer<T> {
 public:
  explicit Dropout(const LayerSpec& spec);
  void set_random_stream(uint64_t key, uint64_t step) override;
  void set_first_sample(int64_t first) override { first_sample_ = first; }
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;

 private:
  std::string name_;
  double p_;
  uint64_t mask_key_, step_ = 0;
  int64_t first_sample_ = 0;  // of the whole batch (set_first_sample)
  bool identity_ = true;       // whether the last forward passed x through unchanged
  std::vector<uint8_t> keep_;  // the last forward's mask
  Tensor<T> y_, dx_;
};

}  // namespace sb::cpu
