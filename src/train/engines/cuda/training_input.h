// Where a CUDA engine's batches come from: the data sets resident on the device and assembled there by one
// kernel per batch (device_batches.h), or, with --input host and for image files, built by host workers
// and uploaded into per-slot buffers (host_input.h). The engine asks for a batch and its labels; which of
// the two serves them is decided here, once.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "comm/communicator.h"
#include "data/batch.h"
#include "data/batch_source.h"
#include "data/dataset.h"
#include "data/input_counters.h"
#include "nn/cuda/layer.h"
#include "train/engines/cuda/device_batches.h"
#include "train/engines/cuda/gpu_wait.h"
#include "train/engines/cuda/host_input.h"
#include "train/engines/cuda/step_inputs.h"
#include "train/engines/cuda/step_staging.h"
#include "train/engines/engine.h"
#include "train/train_config.h"

namespace sb::cuda {

class TrainingInput {
 public:
  // Uploads the data sets (a startup part) or starts the host workers, and logs which. `train`, `test`
  // and `wait` must outlive this.
  TrainingInput(const TrainConfig& config, const Dataset& train, const Dataset& test, const Communicator& comm,
                const BatchOptions& augmentation, BatchFormat format, int local_ranks, const GpuWait& wait);

  // Whether the host builds and uploads the batches: their upload is then timed as the step's data phase,
  // before the step's device work.
  bool from_host() const { return host_input_ != nullptr; }
  // Host input: the training batch `indices` of step `info` into `slot`, uploaded before the compute
  // stream's step (one micro-batch: TrainConfig refuses --input host with --accumulate-steps above 1).
  void stage_training(int slot, std::span<const int64_t> indices, const StepInfo& info, cudaStream_t compute);
  // A training micro-batch of `batch` samples: the host's upload of `slot`, or assembled on the device from
  // the indices at `device_indices` with the step inputs `inputs` (a captured graph reads both at replay).
  DeviceTensor training_batch(int slot, int64_t batch, const int64_t* device_indices, const StepInputs* inputs,
                              cudaStream_t compute);
  // Evaluation batch `number` (evaluation_batch samples each) of this rank's test `indices`, whose samples
  // are `part`, into `slot`; the device's data takes its indices through `staging`.
  DeviceTensor evaluation_batch(int slot, std::span<const int64_t> indices, int64_t evaluation_batch, int64_t number,
                                std::span<const int64_t> part, StepStaging& staging, cudaStream_t compute);
  // The labels of the last batch in `slot` (the device's data has one batch at a time).
  const int32_t* labels(int slot) const { return host_input_ ? host_input_->labels(slot) : batches_->labels(); }
  // After the work that reads `slot`'s batch is queued on `compute`.
  void consumed(int slot, cudaStream_t compute);
  // Image files: the workers' reading, decoding and augmenting so far; nullopt for data in memory.
  std::optional<InputTotals> input_totals() const { return host_input_ ? host_input_->input_totals() : std::nullopt; }

 private:
  bool augment_;
  std::unique_ptr<DeviceDataset> train_data_, test_data_;  // on the device, with batches_
  std::unique_ptr<DeviceBatches> batches_;
  std::unique_ptr<HostInput> host_input_;  // instead of the three above
};

}  // namespace sb::cuda
