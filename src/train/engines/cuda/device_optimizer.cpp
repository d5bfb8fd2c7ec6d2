#include "train/engines/cuda/device_optimizer.h"

#include "core/cuda_check.h"
#include "core/error.h"
#include "optim/cuda/fused_step_hyperparameters.h"
#include "optim/optim_config.h"

namespace sb::cuda {
namespace {

// The fused update of the run's optimizer spec, which the CPU engine builds its optimizer from too.
kernels::FusedOptimizerArgs optimizer_args(const OptimizerSpec& spec) {
  kernels::FusedOptimizerArgs a;
  switch (spec.kind) {
    case OptimizerKind::Sgd:
      a.kind = kernels::OptimizerKind::Sgd;
      a.sgd = fused_step_hyperparameters(sgd_config(spec));
      break;
    case OptimizerKind::Adadelta:
      a.kind = kernels::OptimizerKind::Adadelta;
      a.adadelta = fused_step_hyperparameters(adadelta_config(spec));
      break;
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW:
      a.kind = kernels::OptimizerKind::Adam;
      a.adam = fused_step_hyperparameters(adam_config(spec));
      break;
  }
  return a;
}

// The state buffers of the fused optimizer, named as the CPU optimizers (torch.optim) name them.
std::vector<std::string> optimizer_state_names(const kernels::FusedOptimizerArgs& a) {
  switch (a.kind) {
    case kernels::OptimizerKind::Sgd:
      return a.sgd.momentum > 0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{};
    case kernels::OptimizerKind::Adadelta: return {"square_avg", "acc_delta"};
    case kernels::OptimizerKind::Adam:
      return a.adam.amsgrad ? std::vector<std::string>{"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
                            : std::vector<std::string>{"exp_avg", "exp_avg_sq"};
  }
  return {};
}

}  // namespace

DeviceOptimizer::DeviceOptimizer(const OptimizerSpec& spec, Network& net, DType compute, const double* lr_device,
                                 const LossScaler* scaler, cudaStream_t stream)
    : args_(optimizer_args(spec)), state_names_(optimizer_state_names(args_)), stored_filters_(net.stored_filters()) {
  const int64_t n = net.param_count();
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  args_.n = n;
  args_.params = net.params();
  args_.grads = net.grads();
  for (size_t i = 0; i < state_names_.size(); ++i) {
    args_.state[i] = state_[i].ensure_as<float>(static_cast<size_t>(n));
    CHECK_CUDA(cudaMemsetAsync(args_.state[i], 0, bytes, stream));
  }
  auto* counter = step_counter_.ensure_as<kernels::OptimizerStepCounter>(1);
  CHECK_CUDA(cudaMemsetAsync(counter, 0, sizeof(kernels::OptimizerStepCounter), stream));
  args_.step_counter = counter;
  args_.lr_device = lr_device;
  if (compute != DType::F32) {
    args_.params_copy = net.compute_params();
    args_.copy_dtype = compute;
  }
  if (scaler) {
    args_.found_inf = scaler->found_inf();
    args_.loss_scale = scaler->scale();
  }
}

void DeviceOptimizer::enqueue_step(cudaStream_t stream) const { kernels::fused_optimizer_step(args_, stream); }

void DeviceOptimizer::enqueue_range(int64_t offset, int64_t count, bool advances_step_counter, cudaStream_t stream,
                                    const float* grads) const {
  // fp16's overflow check must read every gradient before any update, so its steps are never split.
  if (args_.found_inf) fatal("DeviceOptimizer: a step with fp16 loss scaling cannot be split into ranges");
  kernels::FusedOptimizerArgs range = args_;
  range.offset = offset;
  range.count = count;
  range.advances_step_counter = advances_step_counter;
  range.range_grads = grads;
  kernels::fused_optimizer_step(range, stream);
}

void DeviceOptimizer::save(EngineState& st) const {
  const size_t n = static_cast<size_t>(args_.n);
  for (size_t i = 0; i < state_names_.size(); ++i) {
    std::vector<float> values(n);
    CHECK_CUDA(cudaMemcpy(values.data(), args_.state[i], n * sizeof(float), cudaMemcpyDeviceToHost));
    filters_to_kcrs(stored_filters_, values);  // the state is laid out like the parameters
    st.optimizer_state.emplace_back(state_names_[i], std::move(values));
  }
  kernels::OptimizerStepCounter counter{};
  CHECK_CUDA(cudaMemcpy(&counter, args_.step_counter, sizeof counter, cudaMemcpyDeviceToHost));
  st.optimizer_steps = counter.steps;
}

void DeviceOptimizer::check_state_count(const EngineState& st, const std::string& optimizer_option) const {
  if (st.optimizer_state.size() != state_names_.size()) {
    throw UserError("the checkpoint's optimizer state does not match --optimizer " + optimizer_option);
  }
}

void DeviceOptimizer::load(const EngineState& st, const std::string& optimizer_option) const {
  check_state_count(st, optimizer_option);
  const size_t n = static_cast<size_t>(args_.n);
  for (size_t i = 0; i < state_names_.size(); ++i) {
    const auto& [name, values] = st.optimizer_state[i];
    if (name != state_names_[i] || values.size() != n) {
      throw UserError("the checkpoint's optimizer state '" + name + "' does not match --optimizer " + optimizer_option);
    }
    std::vector<float> stored = values;
    filters_to_krsc(stored_filters_, stored);
    CHECK_CUDA(cudaMemcpy(args_.state[i], stored.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  }
  const kernels::OptimizerStepCounter counter{st.optimizer_steps, 0, 0};
  CHECK_CUDA(cudaMemcpy(args_.step_counter, &counter, sizeof counter, cudaMemcpyHostToDevice));
}

}  // namespace sb::cuda
