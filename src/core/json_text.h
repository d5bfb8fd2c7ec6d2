// Text for the JSON the program writes (config_json attributes): one quoting rule for every writer.
#pragma once
#include <string>

namespace sb {

// s as a JSON string literal: in double quotes, with '"' and '\' escaped and control characters as \u00XX.
std::string json_quote(const std::string& s);

}  // namespace sb
