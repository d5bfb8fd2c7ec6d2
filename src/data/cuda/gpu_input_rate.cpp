#include "data/cuda/gpu_input_rate.h"

#include <vector>

#include "data/batch_schedule.h"
#include "data/cuda/host_input.h"
#include "data/image_data_sets.h"

namespace sb::cuda {

InputRate measure_gpu_input(const Dataset& train, const Dataset& test, const InputPipelineOptions& options,
                            int64_t warm_up, int64_t batches, const WaitForEvent& wait) {
  HostInput input(train, test, options, wait);
  const CudaStream compute = CudaStream::create_non_blocking();
  const CudaEvent done = CudaEvent::create(cudaEventDisableTiming);
  // The batches HostInput predicts (its own schedule, the same options): it builds each ahead.
  BatchSchedule schedule(train.size(), 1, 0, options.seed, options.drop_last, options.train_batch, shard_sizes(train));
  ScheduledBatch next{0, 0, 0};
  return time_input(options.train_batch, warm_up, batches, input.counters(), [&](int64_t first, int64_t count) {
    for (int64_t b = first; b < first + count; ++b, next = schedule.after(next)) {
      const int slot = static_cast<int>(b % kInputSlots);
      input.stage_training(slot, schedule.indices(next), static_cast<int>(next.epoch), next.first_position, compute.get());
      input.consumed(slot, compute.get());
    }
    done.record(compute.get());
    wait(done);
  });
}

}  // namespace sb::cuda
