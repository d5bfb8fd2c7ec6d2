#include "train/engines/cuda/step_state.h"

#include <algorithm>

#include "kernels/elementwise.h"
#include "train/run_setup.h"

namespace sb::cuda {

StepState::StepState(const TrainConfig& config, int64_t micro_batch, Network& net, DType compute, bool log_probabilities,
                     const CudaStream& stream)
    : staging_(std::make_unique<StepStaging>(std::max(micro_batch * config.accumulate_steps, config.eval_batch_size),
                                             config.accumulate_steps, stream)) {
  if (config.accumulate_steps > 1) accumulated_.ensure_as<float>(static_cast<size_t>(net.param_count()));
  if (compute == DType::F16) scaler_.emplace(stream.get());
  optimizer_ = std::make_unique<DeviceOptimizer>(optimizer_spec_for(config), net, compute, &staging_->device_inputs()->lr,
                                                 scaler_ ? &*scaler_ : nullptr, stream.get());
  train_totals_.emplace();
  eval_totals_.emplace();
  train_totals_->zero(stream.get());
  loss_ = std::make_unique<DeviceLoss>(log_probabilities && !net.log_softmax_in_loss());
}

void StepState::accumulate_gradient(Network& net, size_t micro, size_t count, float weight, cudaStream_t stream) {
  float* grads = net.grads();
  const int64_t n = net.param_count();
  auto* sum = static_cast<float*>(accumulated_.data());
  kernels::scale(grads, grads, weight, n, DType::F32, stream);
  if (micro + 1 < count) {
    kernels::accumulate_into_f32(grads, DType::F32, sum, n, micro > 0, stream);
  } else {
    kernels::add(sum, grads, grads, n, DType::F32, stream);
  }
}

void StepState::enqueue_update(Network& net, cudaStream_t stream) const {
  if (scaler_) scaler_->enqueue_check(net.grads(), net.param_count(), stream);
  optimizer_->enqueue_step(stream);
  if (scaler_) scaler_->enqueue_update(stream);
}

}  // namespace sb::cuda
