#include "train/engines/cuda/gpu_input_rate.h"

#include <vector>

#include "data/image/encoded_images.h"
#include "data/sampler.h"
#include "train/engines/cuda/gpu_wait.h"
#include "train/engines/cuda/step_inputs.h"

namespace sb::cuda {

InputRate measure_gpu_input(const Dataset& train, const Dataset& test, const HostInputOptions& options, int64_t warm_up,
                            int64_t batches, const Communicator& comm) {
  const GpuWait wait(comm);
  HostInput input(train, test, options, wait);
  const CudaStream compute = CudaStream::create_non_blocking();
  const DistributedSampler sampler(train.size(), 1, 0, true, options.seed, false,
                                   train.streamed() ? train.encoded->shard_sizes() : std::vector<int64_t>{});
  const int64_t batch = options.train_batch;
  const int64_t per_epoch = sampler.num_samples() / batch;
  std::vector<int64_t> indices;
  int64_t epoch_held = -1;
  return time_input(batch, warm_up, batches, input.counters(), [&](int64_t first, int64_t count) {
    for (int64_t b = first; b < first + count; ++b) {
      const int64_t epoch = b / per_epoch;
      if (epoch != epoch_held) indices = sampler.indices(epoch_held = epoch);
      const int slot = static_cast<int>(b % kStepSlots);
      StepInfo info;
      info.epoch = static_cast<int>(epoch);
      info.step = b;
      info.position = static_cast<uint64_t>((b % per_epoch) * batch);
      input.stage_training(slot, std::span<const int64_t>(indices).subspan(info.position, static_cast<size_t>(batch)), info,
                           compute.get());
      input.consumed(slot, compute.get());
    }
    wait.for_stream(compute);
  });
}

}  // namespace sb::cuda
