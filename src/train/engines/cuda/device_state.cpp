#include "train/engines/cuda/device_state.h"

#include "core/error.h"

namespace sb::cuda {

EngineState save_device_state(const DeviceStateParts& parts) {
  EngineState st;
  st.params = parts.net.get_params();
  st.buffers = parts.net.get_buffers();
  parts.optimizer.save(st);
  if (parts.scaler) parts.scaler->save(st);
  st.train_totals = parts.train_totals.copy_out();
  return st;
}

void load_device_state(const DeviceStateParts& parts, const EngineState& st, const TrainConfig& config) {
  const size_t n = static_cast<size_t>(parts.net.param_count());
  if (st.params.size() != n || st.buffers.size() != static_cast<size_t>(parts.net.buffer_count())) {
    throw UserError("the checkpoint holds " + std::to_string(st.params.size()) + " parameters but model '" + config.model +
                    "' has " + std::to_string(n) + "; resume with the model and data it was written for");
  }
  parts.optimizer.check_state_count(st, optimizer_name(config.optimizer));
  parts.net.set_params(st.params);
  parts.net.set_buffers(st.buffers);
  parts.optimizer.load(st, optimizer_name(config.optimizer));
  if (parts.scaler) parts.scaler->load(st);
  parts.train_totals.copy_in(st.train_totals);
}

}  // namespace sb::cuda
