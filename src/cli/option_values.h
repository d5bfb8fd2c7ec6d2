// The values of command-line options, read the same way by every subcommand: integers within bounds and
// comma-separated lists. A bad value is a UserError: "--NAME expects ..., got 'VALUE'".
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace sb {

// The upper bounds of to_int_in for an int field and for an int64_t one.
inline constexpr int64_t kIntMax = std::numeric_limits<int>::max();
inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// `option` without its leading dashes.
[[noreturn]] void bad_value(const std::string& option, const std::string& value, const std::string& expected);
int64_t to_int(const std::string& option, const std::string& value);
// An integer option that must fit its field: a value outside [lowest, highest] is refused, never wrapped.
int64_t to_int_in(const std::string& option, const std::string& value, int64_t lowest, int64_t highest);
std::vector<std::string> split_list(const std::string& value);  // "1,4,8" -> {"1", "4", "8"}

}  // namespace sb
