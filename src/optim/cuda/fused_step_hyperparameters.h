// The optimizer configs of src/optim/ as the fused optimizer kernel takes them (kernels/optimizer.h):
// the kernels sit below src/ and know nothing of its types, so the callers convert here, the one place
// that does. The kernel computes its step scalars from these fields by the same templates as the CPU
// optimizers (maths/optimizer_update_rules.h's *_step_scalars).
#pragma once
#include "kernels/optimizer.h"
#include "optim/optim_config.h"

namespace sb {

// A field added to a config must reach the kernel too.
static_assert(sizeof(SgdConfig) == sizeof(kernels::SgdHyperparameters), "SgdConfig and the kernel's fields differ");
static_assert(sizeof(AdadeltaConfig) == sizeof(kernels::AdadeltaHyperparameters),
              "AdadeltaConfig and the kernel's fields differ");
static_assert(sizeof(AdamConfig) == sizeof(kernels::AdamHyperparameters), "AdamConfig and the kernel's fields differ");

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
