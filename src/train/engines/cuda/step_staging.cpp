#include "train/engines/cuda/step_staging.h"

#include <cstring>
#include <string>

#include "core/cuda_check.h"
#include "core/error.h"
#include "train/engines/micro_batches.h"

namespace sb::cuda {

static_assert(sizeof(StepInputs) % sizeof(int64_t) == 0, "StepInputs must fill whole 8-byte words of the block");

StepStaging::StepStaging(int64_t max_batch, int micro_batches, const CudaStream& stream)
    : stream_(stream), max_batch_(max_batch), micro_batches_(micro_batches) {
  pinned_ = PinnedArray<int64_t>(kStepSlots * block_words());
  auto* block = device_.ensure_as<int64_t>(block_words());
  CHECK_CUDA(cudaMemsetAsync(block, 0, block_words() * sizeof(int64_t), stream_.get()));
}

int64_t* StepStaging::pinned_block(int slot) const { return pinned_.data() + static_cast<size_t>(slot) * block_words(); }

const int64_t* StepStaging::device_indices() const { return static_cast<const int64_t*>(device_.data()) + indices_word(); }
StepInputs* StepStaging::device_inputs() const { return static_cast<StepInputs*>(device_.data()); }
const StepInputs* StepStaging::device_micro_inputs(size_t micro) const {
  if (micro >= static_cast<size_t>(micro_batches_))
    fatal("CUDA engine: micro-batch " + std::to_string(micro) + " of a step staged for " + std::to_string(micro_batches_));
  return device_inputs() + 1 + micro;
}

void StepStaging::check_batch(size_t batch) const {
  if (static_cast<int64_t>(batch) > max_batch_) {
    fatal("CUDA engine: a batch of " + std::to_string(batch) + " exceeds the planned " + std::to_string(max_batch_));
  }
}

void StepStaging::upload_step(int slot, std::span<const int64_t> indices, const StepInfo& info,
                              std::span<const std::span<const int64_t>> micro) {
  check_batch(indices.size());
  if (micro.size() > static_cast<size_t>(micro_batches_)) {
    fatal("CUDA engine: a step of " + std::to_string(micro.size()) + " micro-batches exceeds --accumulate-steps " +
          std::to_string(micro_batches_));
  }
  int64_t* block = pinned_block(slot);
  auto* inputs = reinterpret_cast<StepInputs*>(block);
  inputs[0] = StepInputs{info.lr, static_cast<uint64_t>(info.step), info.epoch, info.position};
  uint64_t position = info.position;
  for (size_t m = 0; m < micro.size(); ++m) {
    inputs[1 + m] = StepInputs{info.lr, dropout_step(info.step, micro_batches_, m), info.epoch, position};
    position += static_cast<uint64_t>(micro[m].size());
  }
  std::memcpy(block + indices_word(), indices.data(), indices.size_bytes());
  const size_t bytes = indices_word() * sizeof(int64_t) + indices.size_bytes();
  CHECK_CUDA(cudaMemcpyAsync(device_.data(), block, bytes, cudaMemcpyHostToDevice, stream_.get()));
}

}  // namespace sb::cuda
