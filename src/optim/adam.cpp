#include "optim/adam.h"

#include "maths/optimizer_update_rules.h"
#include "optim/option_checks.h"

namespace sb {

Adam::Adam(int64_t n, const AdamConfig& config)
    : Optimizer(n), config_(config), exp_avg_(static_cast<size_t>(n), 0.0f), exp_avg_sq_(static_cast<size_t>(n), 0.0f) {
  check_config(config_);
  if (config_.amsgrad) max_exp_avg_sq_.assign(static_cast<size_t>(n), 0.0f);
}

std::vector<NamedState> Adam::state() {
  std::vector<NamedState> views = {{"exp_avg", exp_avg_.data(), n_}, {"exp_avg_sq", exp_avg_sq_.data(), n_}};
  if (config_.amsgrad) views.push_back({"max_exp_avg_sq", max_exp_avg_sq_.data(), n_});
  return views;
}

void Adam::update(float* params, const float* grads, double lr, int64_t step) {
  const AdamStep s = adam_step_scalars(config_, lr, step);
  float* m = exp_avg_.data();
  float* v = exp_avg_sq_.data();
  if (config_.amsgrad) {
    float* v_max = max_exp_avg_sq_.data();
    for (int64_t i = 0; i < n_; ++i) adam_amsgrad_update(params[i], grads[i], m[i], v[i], v_max[i], s);
    return;
  }
  for (int64_t i = 0; i < n_; ++i) adam_update(params[i], grads[i], m[i], v[i], s);
}

}  // namespace sb
