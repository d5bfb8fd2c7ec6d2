// Reading back the configuration JSON that TrainConfig::to_json() writes: a flat object of strings,
// numbers and booleans.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sb {

// The members of a flat JSON object: key and the value's JSON text (a string keeps its quotes).
// Throws UserError naming `what` when the text is not such an object.
std::vector<std::pair<std::string, std::string>> flat_json_members(const std::string& text, const std::string& what);

// The text of a JSON string literal as json_quote (core/json_text.h) writes it; nullopt for text that is
// not a string literal.
std::optional<std::string> json_string_value(std::string_view literal);

}  // namespace sb
