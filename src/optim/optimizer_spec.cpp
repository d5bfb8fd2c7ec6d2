#include "optim/optimizer_spec.h"

#include "optim/option_checks.h"

namespace sb {

OptimizerSpec resolve_optimizer_spec(OptimizerKind kind, const OptimizerOptions& o) {
  OptimizerSpec s;
  s.kind = kind;
  s.lr = o.lr.value_or(default_learning_rate(kind));
  s.momentum = o.momentum;
  s.dampening = o.dampening;
  s.nesterov = o.nesterov;
  s.weight_decay = o.weight_decay.value_or(default_weight_decay(kind));
  s.rho = o.rho;
  s.eps = o.eps.value_or(default_eps(kind));
  s.beta1 = o.beta1;
  s.beta2 = o.beta2;
  s.amsgrad = o.amsgrad;
  switch (kind) {
    case OptimizerKind::Sgd: check_config(sgd_config(s)); break;
    case OptimizerKind::Adadelta: check_config(adadelta_config(s)); break;
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: check_config(adam_config(s)); break;
  }
  return s;
}

SgdConfig sgd_config(const OptimizerSpec& s) {
  return SgdConfig{.momentum = s.momentum, .dampening = s.dampening, .nesterov = s.nesterov, .weight_decay = s.weight_decay};
}

AdadeltaConfig adadelta_config(const OptimizerSpec& s) {
  return AdadeltaConfig{.rho = s.rho, .eps = s.eps, .weight_decay = s.weight_decay};
}

AdamConfig adam_config(const OptimizerSpec& s) {
  AdamConfig c;
  c.beta1 = s.beta1;
  c.beta2 = s.beta2;
  c.eps = s.eps;
  c.weight_decay = s.weight_decay;
  c.decoupled_weight_decay = s.kind == OptimizerKind::AdamW;
  c.amsgrad = s.amsgrad;
  return c;
}

}  // namespace sb
