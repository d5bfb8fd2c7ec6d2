#include "train/engines/cuda/loss_scaler.h"

#include "core/cuda_check.h"

namespace sb::cuda {

LossScaler::LossScaler(cudaStream_t stream) {
  auto* state = state_.ensure_as<kernels::LossScaleState>(1);
  const kernels::LossScaleState initial{LossScalePolicy::kInitialScale, 0, 0};
  CHECK_CUDA(cudaMemcpyAsync(state, &initial, sizeof initial, cudaMemcpyHostToDevice, stream));
}

void LossScaler::enqueue_check(const float* grads, int64_t n, cudaStream_t stream) const {
  kernels::check_finite(grads, n, DType::F32, &state()->found_inf, stream);
}

void LossScaler::enqueue_update(cudaStream_t stream) const {
  kernels::update_loss_scale(state(), LossScalePolicy::kGrowthFactor, LossScalePolicy::kBackoffFactor,
                             LossScalePolicy::kGrowthInterval, stream);
}

void LossScaler::save(EngineState& st) const {
  kernels::LossScaleState host{};
  CHECK_CUDA(cudaMemcpy(&host, state(), sizeof host, cudaMemcpyDeviceToHost));
  st.loss_scale = host.scale;
  st.scale_growth = host.growth_tracker;
}

void LossScaler::load(const EngineState& st) const {
  if (st.loss_scale <= 0) return;
  const kernels::LossScaleState host{st.loss_scale, st.scale_growth, 0};
  CHECK_CUDA(cudaMemcpy(state(), &host, sizeof host, cudaMemcpyHostToDevice));
}

}  // namespace sb::cuda
