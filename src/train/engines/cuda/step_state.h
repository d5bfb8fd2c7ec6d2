// What a CUDA engine's training step keeps on the device besides the network: the step's inputs as the
// host stages them (step_staging.h), the sum of a step's earlier micro-batch gradients, the fp16 loss
// scaler, the optimizer, the loss and the training and evaluation loss totals.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <optional>

#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/network.h"
#include "train/engines/cuda/device_loss.h"
#include "train/engines/cuda/device_optimizer.h"
#include "train/engines/cuda/device_state.h"
#include "train/engines/cuda/loss_scaler.h"
#include "train/engines/cuda/step_staging.h"
#include "train/train_config.h"

namespace sb::cuda {

class StepState {
 public:
  // The staging holds a whole training step's indices (every micro-batch of it) or an evaluation batch;
  // the optimizer reads the step's learning rate from the staged inputs. Queues its zeroing on `stream`.
  StepState(const TrainConfig& config, int64_t micro_batch, Network& net, DType compute, bool log_probabilities,
            const CudaStream& stream);

  StepStaging& staging() { return *staging_; }
  const DeviceOptimizer& optimizer() const { return *optimizer_; }
  DeviceLoss& loss() { return *loss_; }
  const DeviceLossTotals& train_totals() const { return *train_totals_; }
  const DeviceLossTotals& eval_totals() const { return *eval_totals_; }
  const float* loss_scale() const { return scaler_ ? scaler_->scale() : nullptr; }
  DeviceStateParts parts(Network& net) const { return {net, *optimizer_, scaler_ ? &*scaler_ : nullptr, *train_totals_}; }

  // With several micro-batches, after micro-batch `micro`'s backward: its weighted gradient joins the
  // step's sum, which the last one leaves in the gradient buffer for the all-reduce.
  void accumulate_gradient(Network& net, size_t micro, size_t count, float weight, cudaStream_t stream);
  // The step's one update after every all-reduce, between the fp16 scaler's overflow check and its update.
  void enqueue_update(Network& net, cudaStream_t stream) const;

 private:
  std::unique_ptr<StepStaging> staging_;
  DeviceBuffer accumulated_;  // the sum of a step's earlier micro-batch gradients (--accumulate-steps > 1)
  std::optional<LossScaler> scaler_;  // fp16 only
  std::unique_ptr<DeviceOptimizer> optimizer_;
  std::optional<DeviceLossTotals> train_totals_, eval_totals_;
  std::unique_ptr<DeviceLoss> loss_;
};

}  // namespace sb::cuda
