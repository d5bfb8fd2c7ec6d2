// A developer switch (core/dev_switches.h) turned off for a scope, as `SCALEBENCH_DEV_...=off` in the
// environment of a run, for the tests that compare a default path with its alternative. Restores the
// variable's previous value (or its absence) at the end of the scope.
#pragma once
#include <cstdlib>
#include <optional>
#include <string>

namespace sb::testing {

class DevSwitchOff {
 public:
  // `off` false leaves the switch as the environment has it, so that one call site serves both runs.
  explicit DevSwitchOff(const char* variable, bool off = true) : variable_(variable) {
    if (const char* before = std::getenv(variable)) before_ = before;
    if (off) setenv(variable, "off", 1);
  }
  ~DevSwitchOff() {
    if (before_) setenv(variable_, before_->c_str(), 1);
    else unsetenv(variable_);
  }
  DevSwitchOff(const DevSwitchOff&) = delete;
  DevSwitchOff& operator=(const DevSwitchOff&) = delete;

 private:
  const char* variable_;
  std::optional<std::string> before_;
};

}  // namespace sb::testing
