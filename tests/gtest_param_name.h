// gtest parameter names may hold only letters, digits and '_'; model and fixture group names use '-'.
#pragma once
#include <string>

namespace sb::testing {

inline std::string gtest_param_name(std::string name) {
  for (char& ch : name)
    if (ch == '-') ch = '_';
  return name;
}

}  // namespace sb::testing
