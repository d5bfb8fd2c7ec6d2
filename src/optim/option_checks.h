// Range checks on hyper-parameters that turn a bad value into a one-sentence UserError, e.g.
// "SGD momentum must be >= 0, got -0.5." Shared by the optimizers and the schedules.
#pragma once
#include <string>

#include "optim/optim_config.h"

namespace sb {

// The shortest decimal form of v ("1e-08", "0.9", "nan").
std::string format_option_value(double v);

// Throws UserError("<who> <option> must be <rule>, got <value>.") unless ok.
void require_option(bool ok, const std::string& who, const std::string& option, const std::string& rule,
                    double value);

// The rules of each optimizer's hyper-parameters (docs/optimizers.md), checked by its constructor and
// by resolve_optimizer_spec: throw UserError for an out-of-range value or combination.
void check_config(const SgdConfig& c);
void check_config(const AdadeltaConfig& c);
void check_config(const AdamConfig& c);  // names AdamW when decoupled_weight_decay

}  // namespace sb
