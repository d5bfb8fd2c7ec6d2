// The message a refused call gives: what the tests of option checks and resume checks compare.
#pragma once
#include <string>

#include "core/error.h"

namespace sb::testing {

// The UserError message of `f`, or "" when it throws none.
template <typename F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace sb::testing
