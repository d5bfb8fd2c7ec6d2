// One optimizer's complete setup, every default resolved: what both engines build their update from.
// The CPU engine turns it into an Optimizer (make_optimizer), the CUDA engine into the fused kernel's
// arguments; both take the per-optimizer configs from sgd_config / adadelta_config / adam_config below,
// so the two cannot read an option differently.
#pragma once
#include <optional>

#include "optim/optim_config.h"
#include "optim/optimizer_kind.h"

namespace sb {

// The union of every optimizer's options as the user gives them; each optimizer reads the ones it has.
// Unset optionals take that optimizer's torch default (optimizer_kind.h).
struct OptimizerOptions {
  std::optional<double> lr;                  // default 1e-3; 1.0 for adadelta
  double momentum = SgdConfig{}.momentum;    // sgd
  double dampening = SgdConfig{}.dampening;  // sgd
  bool nesterov = SgdConfig{}.nesterov;      // sgd
  double rho = AdadeltaConfig{}.rho;         // adadelta
  double beta1 = AdamConfig{}.beta1;         // adam, adamw
  double beta2 = AdamConfig{}.beta2;         // adam, adamw
  bool amsgrad = AdamConfig{}.amsgrad;       // adam, adamw
  std::optional<double> weight_decay;        // default 0; 1e-2 for adamw
  std::optional<double> eps;                 // default 1e-6 for adadelta, 1e-8 for adam and adamw
};

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::Sgd;
  double lr = 0.0;  // the base rate; each step's rate comes from the schedule
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;  // L2, or decoupled for adamw
  double rho = 0.0;
  double eps = 0.0;  // 0 for sgd, which has none
  double beta1 = 0.0;
  double beta2 = 0.0;
  bool amsgrad = false;
  bool operator==(const OptimizerSpec&) const = default;
};

// Resolves the defaults and checks the values the chosen optimizer reads; throws UserError for an
// out-of-range value or combination (e.g. Nesterov without momentum).
OptimizerSpec resolve_optimizer_spec(OptimizerKind kind, const OptimizerOptions& options);

// The update-rule config of the spec's optimizer (the others' are meaningless for it).
SgdConfig sgd_config(const OptimizerSpec& spec);
AdadeltaConfig adadelta_config(const OptimizerSpec& spec);
AdamConfig adam_config(const OptimizerSpec& spec);  // Adam, or AdamW (decoupled weight decay)

}  // namespace sb
