// The per-element update maths of every optimizer, shared by the CPU loops (optimizer .cpp files) and
// the fused CUDA kernels, so that both backends apply exactly the same formula in the same order.
// Each step first turns the hyper-parameters, the learning rate and the step number into a small struct
// of fp32 scalars (bias corrections in double, once per step); the per-element functions then use only
// those. The *_step_scalars functions are templates over where the hyper-parameters come from: the CPU
// optimizers pass their configs (src/optim/optim_config.h), the fused kernel its plain argument structs
// (kernels/optimizer.h), whose fields have the same names; both then compute the scalars with this one
// code. Plain C++17 (CUDA sources compile as C++17). docs/optimizers.md states each formula.
#pragma once
#include <math.h>  // sqrtf, usable in host and device code

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace sb {

// ---- SGD (torch.optim.SGD) ----

struct SgdStep {
  float lr;
  float momentum;
  float one_minus_dampening;
  float weight_decay;
  bool nesterov;
  bool first_step;  // the momentum buffer starts as the gradient itself, without dampening
};

// Hyper: SgdConfig or kernels::SgdHyperparameters (momentum, dampening, nesterov, weight_decay).
template <typename Hyper>
SB_HOST_DEVICE SgdStep sgd_step_scalars(const Hyper& c, double lr, int64_t step) {
  SgdStep s;
  s.lr = static_cast<float>(lr);
  s.momentum = static_cast<float>(c.momentum);
  s.one_minus_dampening = static_cast<float>(1.0 - c.dampening);
  s.weight_decay = static_cast<float>(c.weight_decay);
  s.nesterov = c.nesterov;
  s.first_step = step == 1;
  return s;
}

// momentum == 0: plain (L2-regularised) gradient descent, no state.
SB_HOST_DEVICE void sgd_update(float& param, float grad, const SgdStep& s) {
  float d = grad;
  if (s.weight_decay != 0.0f) d += s.weight_decay * param;
  param -= s.lr * d;
}

// momentum > 0, with optional dampening and Nesterov.
SB_HOST_DEVICE void sgd_momentum_update(float& param, float grad, float& buf, const SgdStep& s) {
  float d = grad;
  if (s.weight_decay != 0.0f) d += s.weight_decay * param;
  buf = s.first_step ? d : s.momentum * buf + s.one_minus_dampening * d;
  d = s.nesterov ? d + s.momentum * buf : buf;
  param -= s.lr * d;
}

// ---- Adadelta (torch.optim.Adadelta) ----

struct AdadeltaStep {
  float lr;
  float rho;
  float one_minus_rho;
  float eps;
  float weight_decay;
};

// Hyper: AdadeltaConfig or kernels::AdadeltaHyperparameters (rho, eps, weight_decay).
template <typename Hyper>
SB_HOST_DEVICE AdadeltaStep adadelta_step_scalars(const Hyper& c, double lr) {
  AdadeltaStep s;
  s.lr = static_cast<float>(lr);
  s.rho = static_cast<float>(c.rho);
  s.one_minus_rho = static_cast<float>(1.0 - c.rho);
  s.eps = static_cast<float>(c.eps);
  s.weight_decay = static_cast<float>(c.weight_decay);
  return s;
}

SB_HOST_DEVICE void adadelta_update(float& param, float grad, float& square_avg, float& acc_delta,
                                    const AdadeltaStep& s) {
  float g = grad;
  if (s.weight_decay != 0.0f) g += s.weight_decay * param;
  square_avg = s.rho * square_avg + s.one_minus_rho * g * g;
  const float delta = sqrtf(acc_delta + s.eps) / sqrtf(square_avg + s.eps) * g;
  acc_delta = s.rho * acc_delta + s.one_minus_rho * delta * delta;
  param -= s.lr * delta;
}

// ---- Adam and AdamW (torch.optim.Adam / AdamW) ----

struct AdamStep {
  float beta1;
  float one_minus_beta1;
  float beta2;
  float one_minus_beta2;
  float eps;
  float l2_weight_decay;        // Adam: added to the gradient; 0 for AdamW
  float decay_factor;           // AdamW: 1 - lr * weight_decay; 1 for Adam
  float step_size;              // lr / (1 - beta1^t)
  float bias_correction2_sqrt;  // sqrt(1 - beta2^t)
};

// Hyper: AdamConfig or kernels::AdamHyperparameters (beta1, beta2, eps, weight_decay,
// decoupled_weight_decay; amsgrad picks the update function, not a scalar). step is the 1-based number
// of this step (t in the formulas).
template <typename Hyper>
SB_HOST_DEVICE AdamStep adam_step_scalars(const Hyper& c, double lr, int64_t step) {
  const double t = static_cast<double>(step);
  AdamStep s;
  s.beta1 = static_cast<float>(c.beta1);
  s.one_minus_beta1 = static_cast<float>(1.0 - c.beta1);
  s.beta2 = static_cast<float>(c.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - c.beta2);
  s.eps = static_cast<float>(c.eps);
  s.l2_weight_decay = c.decoupled_weight_decay ? 0.0f : static_cast<float>(c.weight_decay);
  s.decay_factor = c.decoupled_weight_decay ? static_cast<float>(1.0 - lr * c.weight_decay) : 1.0f;
  s.step_size = static_cast<float>(lr / (1.0 - ::pow(c.beta1, t)));
  s.bias_correction2_sqrt = static_cast<float>(::sqrt(1.0 - ::pow(c.beta2, t)));
  return s;
}

namespace detail {
// Weight decay (either kind), then the two moment averages.
SB_HOST_DEVICE void adam_moments(float& param, float grad, float& exp_avg, float& exp_avg_sq, const AdamStep& s) {
  param *= s.decay_factor;
  float g = grad;
  if (s.l2_weight_decay != 0.0f) g += s.l2_weight_decay * param;
  exp_avg = s.beta1 * exp_avg + s.one_minus_beta1 * g;
  exp_avg_sq = s.beta2 * exp_avg_sq + s.one_minus_beta2 * g * g;
}
SB_HOST_DEVICE void adam_apply(float& param, float exp_avg, float second_moment, const AdamStep& s) {
  const float denom = sqrtf(second_moment) / s.bias_correction2_sqrt + s.eps;
  param -= s.step_size * exp_avg / denom;
}
}  // namespace detail

SB_HOST_DEVICE void adam_update(float& param, float grad, float& exp_avg, float& exp_avg_sq, const AdamStep& s) {
  detail::adam_moments(param, grad, exp_avg, exp_avg_sq, s);
  detail::adam_apply(param, exp_avg, exp_avg_sq, s);
}

// AMSGrad: the denominator uses the running maximum of the second moment.
SB_HOST_DEVICE void adam_amsgrad_update(float& param, float grad, float& exp_avg, float& exp_avg_sq,
                                        float& max_exp_avg_sq, const AdamStep& s) {
  detail::adam_moments(param, grad, exp_avg, exp_avg_sq, s);
  max_exp_avg_sq = max_exp_avg_sq > exp_avg_sq ? max_exp_avg_sq : exp_avg_sq;
  detail::adam_apply(param, exp_avg, max_exp_avg_sq, s);
}

}  // namespace sb
