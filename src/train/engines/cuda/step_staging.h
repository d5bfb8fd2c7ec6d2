// What the host sends the device before a batch runs: for a training step its StepInputs, each
// micro-batch's StepInputs (--accumulate-steps: its dropout key and augmentation position) and the
// batch's dataset indices. They are staged per step slot in one pinned block and go to one device block
// of the same layout in ONE asynchronous copy on the compute stream: each copy between two step graphs
// costs the GPU a few microseconds of idle time, which the latency-bound steps feel. A captured graph
// reads them from the same device addresses at every replay.
#pragma once
#include <cstdint>
#include <span>

#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"
#include "train/engines/cuda/step_inputs.h"
#include "train/engines/engine.h"

namespace sb::cuda {

class StepStaging {
 public:
  // max_batch: the most indices one batch may have (training or evaluation); micro_batches: the most
  // micro-batches of a step (0 where nothing reads per-micro-batch inputs). Zeroes the device block on
  // `stream`.
  StepStaging(int64_t max_batch, int micro_batches, const CudaStream& stream);

  // Queues the copy of a training step's inputs, its micro-batches' inputs (one per span of `micro`,
  // whose sizes add up to the indices) and its indices from `slot`'s pinned block, which the step two
  // before this one last read (it finished before the previous step's times were read).
  void upload_step(int slot, std::span<const int64_t> indices, const StepInfo& info,
                   std::span<const std::span<const int64_t>> micro = {});

  const int64_t* device_indices() const;
  StepInputs* device_inputs() const;
  const StepInputs* device_micro_inputs(size_t micro) const;

 private:
  // The block's layout, in 8-byte words: the step's StepInputs, then micro_batches_ StepInputs, then
  // max_batch_ indices.
  static constexpr size_t kInputWords = sizeof(StepInputs) / sizeof(int64_t);
  size_t indices_word() const { return kInputWords * (1 + static_cast<size_t>(micro_batches_)); }
  size_t block_words() const { return indices_word() + static_cast<size_t>(max_batch_); }
  int64_t* pinned_block(int slot) const;
  void check_batch(size_t batch) const;

  const CudaStream& stream_;
  int64_t max_batch_;
  int micro_batches_;
  PinnedArray<int64_t> pinned_;  // block_words() per slot
  DeviceBuffer device_;          // one block
};

}  // namespace sb::cuda
