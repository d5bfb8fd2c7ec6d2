// The StepInputs of each micro-batch of a training step (--accumulate-steps): its first sample's
// position (keys the augmentation) and the number that keys its dropout masks (train/micro_batches.h).
// Staged per step slot in pinned memory and copied with one asynchronous copy before the step, like
// StepStaging's inputs, so that a captured graph reads each micro-batch's own from fixed device addresses.
#pragma once
#include <cstdint>
#include <span>

#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"
#include "train/cuda/step_inputs.h"
#include "train/engine.h"

namespace sb::cuda {

class MicroStepInputs {
 public:
  // accumulate_steps: the most micro-batches of a step. Zeroes the device inputs on `stream`.
  MicroStepInputs(int accumulate_steps, const CudaStream& stream);

  // Queues the copy of the inputs of a step whose micro-batches have the given sizes, from `slot`'s
  // pinned memory (which the step two before this one last read).
  void upload(int slot, const StepInfo& info, std::span<const std::span<const int64_t>> micro_batches);
  const StepInputs* device(size_t micro) const { return static_cast<const StepInputs*>(device_.data()) + micro; }

 private:
  const CudaStream& stream_;
  int accumulate_steps_;
  PinnedArray<StepInputs> pinned_;  // accumulate_steps_ per slot
  DeviceBuffer device_;
};

}  // namespace sb::cuda
