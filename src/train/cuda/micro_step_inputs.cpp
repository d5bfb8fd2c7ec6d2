#include "train/cuda/micro_step_inputs.h"

#include <string>

#include "core/cuda_check.h"
#include "core/error.h"
#include "train/micro_batches.h"

namespace sb::cuda {

MicroStepInputs::MicroStepInputs(int accumulate_steps, const CudaStream& stream)
    : stream_(stream),
      accumulate_steps_(accumulate_steps),
      pinned_(static_cast<size_t>(kStepSlots) * static_cast<size_t>(accumulate_steps)) {
  auto* inputs = device_.ensure_as<StepInputs>(static_cast<size_t>(accumulate_steps_));
  CHECK_CUDA(cudaMemsetAsync(inputs, 0, sizeof(StepInputs) * static_cast<size_t>(accumulate_steps_), stream_.get()));
}

void MicroStepInputs::upload(int slot, const StepInfo& info, std::span<const std::span<const int64_t>> micro_batches) {
  if (micro_batches.size() > static_cast<size_t>(accumulate_steps_)) {
    fatal("CUDA engine: a step of " + std::to_string(micro_batches.size()) + " micro-batches exceeds --accumulate-steps " +
          std::to_string(accumulate_steps_));
  }
  StepInputs* host = pinned_.data() + static_cast<size_t>(slot) * static_cast<size_t>(accumulate_steps_);
  uint64_t position = info.position;
  for (size_t m = 0; m < micro_batches.size(); ++m) {
    host[m] = StepInputs{info.lr, dropout_step(info.step, accumulate_steps_, m), info.epoch, position};
    position += static_cast<uint64_t>(micro_batches[m].size());
  }
  CHECK_CUDA(cudaMemcpyAsync(device_.data(), host, sizeof(StepInputs) * micro_batches.size(), cudaMemcpyHostToDevice,
                             stream_.get()));
}

}  // namespace sb::cuda
