#include "optim/adadelta.h"

#include "maths/optimizer_update_rules.h"
#include "optim/option_checks.h"

namespace sb {

Adadelta::Adadelta(int64_t n, const AdadeltaConfig& config)
    : Optimizer(n), config_(config), square_avg_(static_cast<size_t>(n), 0.0f), acc_delta_(static_cast<size_t>(n), 0.0f) {
  check_config(config_);
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
