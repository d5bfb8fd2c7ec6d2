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

}  // namespace sb
