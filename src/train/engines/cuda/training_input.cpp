#include "train/engines/cuda/training_input.h"

#include <algorithm>

#include "data/worker_count.h"
#include "train/engines/cuda/context_options.h"
#include "train/engines/cuda/gpu_wait.h"
#include "train/engines/cuda/step_inputs.h"
#include "train/run_setup.h"

namespace sb::cuda {

static_assert(kInputSlots == kStepSlots, "the input pipeline holds a batch per step slot");

InputPipelineOptions input_pipeline_options(const TrainConfig& config, const Dataset& train, const Communicator& comm,
                                            BatchFormat format, int local_ranks) {
  InputPipelineOptions o;
  o.from_host = config.input == InputSource::Host;
  o.augmentation = config.augment ? cifar_augmentation() : BatchOptions{};
  o.seed = config.seed;
  o.rank = comm.rank();
  o.world_size = comm.size();
  o.drop_last = config.drop_last;
  o.train_batch = config.per_rank_batch(comm.size());
  o.max_batch = std::max(o.train_batch, config.eval_batch_size);
  o.format = format;
  // --decode gpu's workers mostly wait for the GPU: a few keep its JPEG engines busy (scalebench io).
  constexpr int kGpuDecodeWorkers = 4;
  const bool gpu_decode = train.streamed() && config.decode == ImageDecoding::Gpu;
  o.workers = config.workers > 0 ? config.workers
              : gpu_decode       ? std::min(kGpuDecodeWorkers, default_input_workers(local_ranks))
                                 : default_input_workers(local_ranks);
  o.pin_memory = config.pin_memory;
  o.bad_images = config.bad_images;
  o.decode = config.decode;
  return o;
}

std::unique_ptr<InputPipeline> make_training_input(const TrainConfig& config, const Dataset& train, const Dataset& test,
                                                   const Communicator& comm, int local_ranks) {
  const ContextOptions context = context_options(config);
  const InputPipelineOptions options =
      input_pipeline_options(config, train, comm, BatchFormat{context.compute, context.layout}, local_ranks);
  return make_input_pipeline(train, test, options, [wait = GpuWait(comm)](const CudaEvent& event) { wait.for_event(event); });
}

}  // namespace sb::cuda
