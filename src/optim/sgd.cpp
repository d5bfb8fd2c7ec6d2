#include "optim/sgd.h"

#include "maths/optimizer_update_rules.h"
#include "optim/option_checks.h"

namespace sb {

Sgd::Sgd(int64_t n, const SgdConfig& config) : Optimizer(n), config_(config) {
  check_config(config_);
  if (config_.momentum != 0.0) momentum_buffer_.assign(static_cast<size_t>(n), 0.0f);
}

std::vector<NamedState> Sgd::state() {
  if (config_.momentum == 0.0) return {};
  return {{"momentum_buffer", momentum_buffer_.data(), n_}};
}

void Sgd::update(float* params, const float* grads, double lr, int64_t step) {
  const SgdStep s = sgd_step_scalars(config_, lr, step);
  if (config_.momentum == 0.0) {
    for (int64_t i = 0; i < n_; ++i) sgd_update(params[i], grads[i], s);
    return;
  }
  float* buf = momentum_buffer_.data();
  for (int64_t i = 0; i < n_; ++i) sgd_momentum_update(params[i], grads[i], buf[i], s);
}

}  // namespace sb
