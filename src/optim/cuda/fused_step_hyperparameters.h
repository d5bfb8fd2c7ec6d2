// The optimizer configs of src/optim/ as the fused optimizer kernel takes them (kernels/optimizer.h):
// the kernels sit below src/ and know nothing of its types, so the callers convert here.
#pragma once
#include "kernels/optimizer.h"
#include "optim/optim_config.h"

namespace sb {

inline kernels::SgdHyperparameters fused_step_hyperparameters(const SgdConfig& c) {
  kernels::SgdHyperparameters h;
  h.momentum = c.momentum;
  h.dampening = c.dampening;
  h.nesterov = c.nesterov;
  h.weight_decay = c.weight_decay;
  return h;
}

inline kernels::AdadeltaHyperparameters fused_step_hyperparameters(const AdadeltaConfig& c) {
  kernels::AdadeltaHyperparameters h;
  h.rho = c.rho;
  h.eps = c.eps;
  h.weight_decay = c.weight_decay;
  return h;
}

inline kernels::AdamHyperparameters fused_step_hyperparameters(const AdamConfig& c) {
  kernels::AdamHyperparameters h;
  h.beta1 = c.beta1;
  h.beta2 = c.beta2;
  h.eps = c.eps;
  h.weight_decay = c.weight_decay;
  h.decoupled_weight_decay = c.decoupled_weight_decay;
  h.amsgrad = c.amsgrad;
  return h;
}

}  // namespace sb
