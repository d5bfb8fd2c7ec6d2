#include "train/cuda/step_staging.h"

#include <cstring>
#include <string>

#include "core/cuda_check.h"
#include "core/error.h"

namespace sb::cuda {

StepStaging::StepStaging(int64_t max_batch, const CudaStream& stream)
    : stream_(stream),
      max_batch_(max_batch),
      pinned_inputs_(kStepSlots),
      pinned_indices_(kStepSlots * static_cast<size_t>(max_batch)) {
  auto* inputs = device_inputs_.ensure_as<StepInputs>(1);
  CHECK_CUDA(cudaMemsetAsync(inputs, 0, sizeof(StepInputs), stream_.get()));
  device_indices_.ensure_as<int64_t>(static_cast<size_t>(max_batch_));
}

int64_t* StepStaging::pinned_indices(int slot) const {
  return pinned_indices_.data() + static_cast<size_t>(slot) * static_cast<size_t>(max_batch_);
}

void StepStaging::check_batch(size_t batch) const {
  if (static_cast<int64_t>(batch) > max_batch_) {
    fatal("CUDA engine: a batch of " + std::to_string(batch) + " exceeds the planned " + std::to_string(max_batch_));
  }
}

void StepStaging::upload_step(int slot, std::span<const int64_t> indices, const StepInfo& info) {
  check_batch(indices.size());
  int64_t* host_indices = pinned_indices(slot);
  std::memcpy(host_indices, indices.data(), indices.size_bytes());
  StepInputs& inputs = pinned_inputs_[static_cast<size_t>(slot)];
  inputs = StepInputs{info.lr, static_cast<uint64_t>(info.step), info.epoch, info.position};
  CHECK_CUDA(cudaMemcpyAsync(device_indices_.data(), host_indices, indices.size_bytes(), cudaMemcpyHostToDevice,
                             stream_.get()));
  CHECK_CUDA(cudaMemcpyAsync(device_inputs_.data(), &inputs, sizeof inputs, cudaMemcpyHostToDevice, stream_.get()));
}

void StepStaging::upload_indices(std::span<const int64_t> indices) {
  check_batch(indices.size());
  stream_.synchronize();
  int64_t* host_indices = pinned_indices(0);
  std::memcpy(host_indices, indices.data(), indices.size_bytes());
  CHECK_CUDA(cudaMemcpyAsync(device_indices_.data(), host_indices, indices.size_bytes(), cudaMemcpyHostToDevice,
                             stream_.get()));
}

}  // namespace sb::cuda
