#include "train/engines/cuda/training_input.h"

#include <algorithm>

#include "core/log.h"
#include "core/startup_clock.h"
#include "data/worker_count.h"

namespace sb::cuda {
namespace {

HostInputOptions host_input_options(const TrainConfig& config, const Dataset& train, const Communicator& comm,
                                    const BatchOptions& augmentation, BatchFormat format, int local_ranks) {
  HostInputOptions o;
  o.augmentation = augmentation;
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

}  // namespace

TrainingInput::TrainingInput(const TrainConfig& config, const Dataset& train, const Dataset& test, const Communicator& comm,
                             const BatchOptions& augmentation, BatchFormat format, int local_ranks, const GpuWait& wait)
    : augment_(config.augment) {
  if (config.input == InputSource::Host || train.streamed()) {
    host_input_ = std::make_unique<HostInput>(train, test, host_input_options(config, train, comm, augmentation, format, local_ranks), wait);
    log0("input: %s, %d batch worker(s) per rank, %s buffers\n",
         !train.streamed() ? "host memory"
         : config.decode == ImageDecoding::Gpu ? "image files read on the CPU, decoded by nvJPEG"
                                               : "image files decoded on the CPU",
         host_input_->workers(),
         config.pin_memory ? "pinned" : "pageable");
    return;
  }
  StartupSpan upload_startup(StartupPart::upload);
  train_data_ = std::make_unique<DeviceDataset>(train);
  test_data_ = std::make_unique<DeviceDataset>(test);
  upload_startup.stop();
  const int64_t max_batch = std::max(config.per_rank_batch(comm.size()), config.eval_batch_size);
  batches_ = std::make_unique<DeviceBatches>(augmentation, config.seed, comm.rank(), format.dtype, format.layout, max_batch);
}

void TrainingInput::stage_training(int slot, std::span<const int64_t> indices, const StepInfo& info, cudaStream_t compute) {
  if (host_input_) host_input_->stage_training(slot, indices, info, compute);
}

DeviceTensor TrainingInput::training_batch(int slot, int64_t batch, const int64_t* device_indices, const StepInputs* inputs,
                                           cudaStream_t compute) {
  if (host_input_) return host_input_->input(slot, batch);
  return batches_->enqueue(*train_data_, device_indices, batch, augment_, inputs, compute);
}

DeviceTensor TrainingInput::evaluation_batch(int slot, std::span<const int64_t> indices, int64_t evaluation_batch,
                                             int64_t number, std::span<const int64_t> part, StepStaging& staging,
                                             cudaStream_t compute) {
  const int64_t batch = static_cast<int64_t>(part.size());
  if (host_input_) {
    host_input_->stage_evaluation(slot, indices, evaluation_batch, number, compute);
    return host_input_->input(slot, batch);
  }
  staging.upload_indices(part);
  return batches_->enqueue(*test_data_, staging.device_indices(), batch, false, nullptr, compute);
}

void TrainingInput::consumed(int slot, cudaStream_t compute) {
  if (host_input_) host_input_->consumed(slot, compute);
}

}  // namespace sb::cuda
