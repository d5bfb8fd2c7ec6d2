// What the host sends the device before a batch runs: the batch's dataset indices and, for a training
// step, its StepInputs, staged in pinned memory per step slot and copied with asynchronous copies on the
// compute stream (a captured graph reads them from the same device addresses at every replay).
#pragma once
#include <cstdint>
#include <span>

#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"
#include "train/cuda/step_inputs.h"
#include "train/engine.h"

namespace sb::cuda {

class StepStaging {
 public:
  // max_batch: the most indices one batch may have (training or evaluation). Zeroes the device inputs
  // on `stream`.
  StepStaging(int64_t max_batch, const CudaStream& stream);

  // Queues the copies of a training step's indices and inputs from `slot`'s pinned memory, which the
  // step two before this one last read (it finished before the previous step's times were read).
  void upload_step(int slot, std::span<const int64_t> indices, const StepInfo& info);
  // Queues the copy of an evaluation batch's indices, after waiting for the stream: evaluation reuses
  // the first slot's pinned memory from batch to batch.
  void upload_indices(std::span<const int64_t> indices);

  const int64_t* device_indices() const { return static_cast<const int64_t*>(device_indices_.data()); }
  StepInputs* device_inputs() const { return static_cast<StepInputs*>(device_inputs_.data()); }

 private:
  int64_t* pinned_indices(int slot) const;
  void check_batch(size_t batch) const;

  const CudaStream& stream_;
  int64_t max_batch_;
  PinnedArray<StepInputs> pinned_inputs_;  // one per slot
  PinnedArray<int64_t> pinned_indices_;    // max_batch_ per slot
  DeviceBuffer device_indices_, device_inputs_;
};

}  // namespace sb::cuda
