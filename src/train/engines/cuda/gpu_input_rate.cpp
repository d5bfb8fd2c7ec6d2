#include "train/engines/cuda/gpu_input_rate.h"

#include <vector>

#include "data/batch_schedule.h"
#include "data/image/encoded_images.h"
#include "train/engines/cuda/gpu_wait.h"
#include "train/engines/cuda/step_inputs.h"

namespace sb::cuda {

InputRate measure_gpu_input(const Dataset& train, const Dataset& test, const HostInputOptions& options, int64_t warm_up,
                            int64_t batches, const Communicator& comm) {
  const GpuWait wait(comm);
  HostInput input(train, test, options, wait);
  const CudaStream compute = CudaStream::create_non_blocking();
  // The batches HostInput predicts (its own schedule, the same options): it builds each ahead.
  BatchSchedule schedule(train.size(), 1, 0, options.seed, options.drop_last, options.train_batch,
                         train.streamed() ? train.encoded->shard_sizes() : std::vector<int64_t>{});
  ScheduledBatch next{0, 0, 0};
  return time_input(options.train_batch, warm_up, batches, input.counters(), [&](int64_t first, int64_t count) {
    for (int64_t b = first; b < first + count; ++b, next = schedule.after(next)) {
      const int slot = static_cast<int>(b % kStepSlots);
      StepInfo info;
      info.epoch = static_cast<int>(next.epoch);
      info.step = b;
      info.position = next.first_position;
      input.stage_training(slot, schedule.indices(next), info, compute.get());
      input.consumed(slot, compute.get());
    }
    wait.for_stream(compute);
  });
}

}  // namespace sb::cuda
