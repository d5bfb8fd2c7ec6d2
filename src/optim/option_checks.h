// Range checks on hyper-parameters that turn a bad value into a one-sentence UserError, e.g.
// "SGD momentum must be >= 0, got -0.5." Shared by the optimizers and the schedules.
#pragma once
#include <string>

namespace sb {

// The shortest decimal form of v ("1e-08", "0.9", "nan").
std::string format_option_value(double v);

// Throws UserError("<who> <option> must be <rule>, got <value>.") unless ok.
void require_option(bool ok, const std::string& who, const std::string& option, const std::string& rule,
                    double value);

}  // namespace sb
