// fp16 dynamic loss scaling on the device, with torch.cuda.amp.GradScaler's semantics and defaults, so
// that it needs no host synchronisation: the loss kernel multiplies the gradient by the scale, the
// averaged gradients are checked for inf/NaN, the fused optimizer divides the scale out and skips the
// whole step when one was found, and the scale is then updated (kernels/amp.h).
#pragma once
#include <cstdint>

#include "kernels/amp.h"
#include "nn/cuda/device_buffer.h"
#include "train/engines/engine.h"

namespace sb::cuda {

// GradScaler's defaults: start at 2^16, halve on an overflow, double after 2000 clean steps in a row.
struct LossScalePolicy {
  static constexpr float kInitialScale = 65536.0f;
  static constexpr float kGrowthFactor = 2.0f;
  static constexpr float kBackoffFactor = 0.5f;
  static constexpr int kGrowthInterval = 2000;
};

class LossScaler {
 public:
  // Queues the initial state on `stream`.
  explicit LossScaler(cudaStream_t stream);

  // Device pointers for the loss kernel (the scale) and the optimizer (the scale and the overflow flag).
  const float* scale() const { return &state()->scale; }
  const int32_t* found_inf() const { return &state()->found_inf; }

  // Sets the overflow flag when any of the n gradients is inf or NaN. Every rank checks the same averaged
  // gradients, so every rank skips the same steps.
  void enqueue_check(const float* grads, int64_t n, cudaStream_t stream) const;
  // After the optimizer: grows or backs off the scale and clears the flag.
  void enqueue_update(cudaStream_t stream) const;

  // Synchronous copies for checkpoints: loss_scale and scale_growth. A state without a scale (0, from a
  // run that did not scale) leaves the current one.
  void save(EngineState& state) const;
  void load(const EngineState& state) const;

 private:
  kernels::LossScaleState* state() const { return static_cast<kernels::LossScaleState*>(state_.data()); }
  DeviceBuffer state_;
};

}  // namespace sb::cuda
