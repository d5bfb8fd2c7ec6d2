// The spellings of a switch's value, as flags take them.
#pragma once
#include <optional>
#include <string_view>

namespace sb {

// on, true, 1, yes / off, false, 0, no; nullopt for anything else.
inline std::optional<bool> on_off_value(std::string_view text) {
  if (text == "on" || text == "true" || text == "1" || text == "yes") return true;
  if (text == "off" || text == "false" || text == "0" || text == "no") return false;
  return std::nullopt;
}

}  // namespace sb
