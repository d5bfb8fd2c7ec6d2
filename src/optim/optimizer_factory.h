// Builds an optimizer from its name and the user's options (the CLI's --optimizer and friends).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "optim/optimizer.h"

namespace sb {

// The union of every optimizer's hyper-parameters; each optimizer reads the ones it has.
// Unset optionals take that optimizer's torch default.
struct OptimizerOptions {
  double momentum = 0.0;   // sgd
  double dampening = 0.0;  // sgd
  bool nesterov = false;   // sgd
  double rho = 0.9;        // adadelta
  double beta1 = 0.9;      // adam, adamw
  double beta2 = 0.999;    // adam, adamw
  bool amsgrad = false;    // adam, adamw
  std::optional<double> weight_decay;  // default 0; 1e-2 for adamw
  std::optional<double> eps;           // default 1e-6 for adadelta, 1e-8 for adam and adamw
};

// "sgd", "adadelta", "adam", "adamw".
const std::vector<std::string>& optimizer_names();

// Throws UserError naming the unknown value and listing the valid ones, or for an out-of-range option.
// The name is matched without regard to case.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const OptimizerOptions& options, int64_t n);

// torch.optim's default learning rate for each optimizer: 1e-3, except 1.0 for adadelta.
double default_learning_rate(const std::string& name);

}  // namespace sb
