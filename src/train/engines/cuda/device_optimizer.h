// The run's optimizer on the device: one fused kernel (kernels/optimizer.h) over the flat fp32 master
// weights, built from the same OptimizerSpec as the CPU engine's optimizer, with its state buffers and
// step counter in device memory under torch.optim's names.
#pragma once
#include <string>
#include <vector>

#include "kernels/optimizer.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/network.h"
#include "optim/optimizer_spec.h"
#include "train/engines/cuda/loss_scaler.h"
#include "train/engines/engine.h"

namespace sb::cuda {

class DeviceOptimizer {
 public:
  // Updates net's parameters from its gradients at the learning rate *lr_device (device memory, so that
  // a captured graph follows the schedule). Writes the compute-dtype copy of the weights when
  // compute is not F32; unscales and skips overflowing steps through `scaler` when not null. Zeroes
  // the state and the step counter on `stream`.
  DeviceOptimizer(const OptimizerSpec& spec, Network& net, DType compute, const double* lr_device,
                  const LossScaler* scaler, cudaStream_t stream);

  // The whole step: one launch over every parameter, advancing the step counter.
  void enqueue_step(cudaStream_t stream) const;
  // One range of a step split by gradient bucket: the parameters [offset, offset + count). Every range of
  // a step reads the same step number; the one that `advances_step_counter` must be queued last, after
  // the others on the same stream. grads: where the range's count averaged gradients are, when not in the
  // network's gradient buffer (nullptr: there).
  void enqueue_range(int64_t offset, int64_t count, bool advances_step_counter, cudaStream_t stream,
                     const float* grads = nullptr) const;
  int64_t param_count() const { return args_.n; }

  // Synchronous copies for checkpoints: optimizer_state (by torch.optim's names) and optimizer_steps.
  void save(EngineState& state) const;
  // Throws a UserError naming `optimizer_option` (--optimizer) unless `state` holds as many state
  // buffers as this optimizer.
  void check_state_count(const EngineState& state, const std::string& optimizer_option) const;
  // Restores optimizer_state and optimizer_steps; throws a UserError for a buffer of another name or size.
  void load(const EngineState& state, const std::string& optimizer_option) const;

 private:
  kernels::FusedOptimizerArgs args_;
  std::vector<std::string> state_names_;
  std::vector<FilterSegment> stored_filters_;  // the network's: the state is stored in its order
  // FusedOptimizerArgs::state's length: Adam with AMSGrad keeps three buffers.
  static constexpr size_t kMaxStateBuffers = 3;
  static_assert(sizeof(kernels::FusedOptimizerArgs::state) == kMaxStateBuffers * sizeof(float*));
  DeviceBuffer state_[kMaxStateBuffers];
  DeviceBuffer step_counter_;
};

}  // namespace sb::cuda
