#include "cli/option_values.h"

#include <charconv>
#include <sstream>

#include "core/error.h"

namespace sb {

void bad_value(const std::string& option, const std::string& value, const std::string& expected) {
  throw UserError("--" + option + " expects " + expected + ", got '" + value + "'");
}

int64_t to_int(const std::string& option, const std::string& value) {
  int64_t x = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
  if (ec != std::errc() || end != value.data() + value.size()) bad_value(option, value, "an integer");
  return x;
}

int64_t to_int_in(const std::string& option, const std::string& value, int64_t lowest, int64_t highest) {
  const int64_t x = to_int(option, value);
  if (x < lowest || x > highest)
    bad_value(option, value, "an integer from " + std::to_string(lowest) + " to " + std::to_string(highest));
  return x;
}

std::vector<std::string> split_list(const std::string& value) {
  std::vector<std::string> out;
  std::stringstream ss(value);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

}  // namespace sb
