#include "optim/adadelta.h"

#include "optim/option_checks.h"
#include "optim/update_rules.h"

namespace sb {

Adadelta::Adadelta(int64_t n, const AdadeltaConfig& config)
    : Optimizer(n), config_(config), square_avg_(static_cast<size_t>(n), 0.0f), acc_delta_(static_cast<size_t>(n), 0.0f) {
  require_option(config_.rho >= 0.0 && config_.rho <= 1.0, "Adadelta", "rho", "in [0, 1]", config_.rho);
  require_option(config_.eps >= 0.0, "Adadelta", "eps", ">= 0", config_.eps);
  require_option(config_.weight_decay >= 0.0, "Adadelta", "weight decay", ">= 0", config_.weight_decay);
}

std::vector<NamedState> Adadelta::state() {
  return {{"square_avg", square_avg_.data(), n_}, {"acc_delta", acc_delta_.data(), n_}};
}

void Adadelta::update(float* params, const float* grads, double lr, int64_t /*step*/) {
  const AdadeltaStep s = adadelta_step_scalars(config_, lr);
  float* square_avg = square_avg_.data();
  float* acc_delta = acc_delta_.data();
  for (int64_t i = 0; i < n_; ++i) adadelta_update(params[i], grads[i], square_avg[i], acc_delta[i], s);
}

}  // namespace sb
