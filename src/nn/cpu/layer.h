// The CPU reference layer interface. Plain loops (BLAS for GEMMs) in a scalar type T: float for
// training, double for finite-difference gradient checks.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace sb::cpu {

enum class Mode { Train, Eval };

template <typename T>
class Layer {
 public:
  virtual ~Layer() = default;
  // Views into the model's flat buffers, in the order of layer_params()/layer_buffers() of the spec.
  virtual void bind(T* /*params*/, T* /*grads*/, T* /*buffers*/) {}
  // Keys the layer's random draws (dropout) for the next forward: key names the run and rank, step the
  // training step. Layers with no randomness ignore it.
  virtual void set_random_stream(uint64_t /*key*/, uint64_t /*step*/) {}
  // The position of the next forward's first sample in the step's whole batch (0 unless one replica of a
  // data-parallel step runs a slice of it): dropout then draws that slice's part of the whole batch's mask.
  virtual void set_first_sample(int64_t /*first*/) {}
  // The returned output stays valid, and x must stay alive, until the next forward.
  virtual const Tensor<T>& forward(const Tensor<T>& x, Mode mode) = 0;
  // dy is the gradient of the loss with respect to the last forward's output. Returns dx and
  // overwrites (does not accumulate) this layer's parameter gradients.
  virtual const Tensor<T>& backward(const Tensor<T>& dy) = 0;
};

}  // namespace sb::cpu
