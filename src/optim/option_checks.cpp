#include "optim/option_checks.h"

#include <cstdio>

#include "core/error.h"

namespace sb {

std::string format_option_value(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

void require_option(bool ok, const std::string& who, const std::string& option, const std::string& rule,
                    double value) {
  if (!ok) throw UserError(who + " " + option + " must be " + rule + ", got " + format_option_value(value) + ".");
}

void check_config(const SgdConfig& c) {
  require_option(c.momentum >= 0.0, "SGD", "momentum", ">= 0", c.momentum);
  require_option(c.dampening >= 0.0 && c.dampening <= 1.0, "SGD", "dampening", "in [0, 1]", c.dampening);
  require_option(c.weight_decay >= 0.0, "SGD", "weight decay", ">= 0", c.weight_decay);
  if (c.nesterov && (c.momentum <= 0.0 || c.dampening != 0.0))
    throw UserError("SGD with Nesterov needs momentum > 0 and dampening 0, got momentum " +
                    format_option_value(c.momentum) + " and dampening " + format_option_value(c.dampening) + ".");
}

void check_config(const AdadeltaConfig& c) {
  require_option(c.rho >= 0.0 && c.rho <= 1.0, "Adadelta", "rho", "in [0, 1]", c.rho);
  require_option(c.eps >= 0.0, "Adadelta", "eps", ">= 0", c.eps);
  require_option(c.weight_decay >= 0.0, "Adadelta", "weight decay", ">= 0", c.weight_decay);
}

void check_config(const AdamConfig& c) {
  const char* who = c.decoupled_weight_decay ? "AdamW" : "Adam";
  require_option(c.beta1 >= 0.0 && c.beta1 < 1.0, who, "beta1", "in [0, 1)", c.beta1);
  require_option(c.beta2 >= 0.0 && c.beta2 < 1.0, who, "beta2", "in [0, 1)", c.beta2);
  require_option(c.eps >= 0.0, who, "eps", ">= 0", c.eps);
  require_option(c.weight_decay >= 0.0, who, "weight decay", ">= 0", c.weight_decay);
}

}  // namespace sb
