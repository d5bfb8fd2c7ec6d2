#include "train/config_json.h"

#include <cctype>
#include <charconv>

#include "core/error.h"

namespace sb {

std::vector<std::pair<std::string, std::string>> flat_json_members(const std::string& text, const std::string& what) {
  const auto bad = [&] { throw UserError(what + " holds a configuration that is not a flat JSON object; it was not written by scalebench"); };
  size_t i = 0;
  const auto skip_space = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  // A JSON string from text[i] == '"': its raw text, quotes and escapes included.
  const auto string_token = [&] {
    const size_t begin = i++;
    while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
    if (i >= text.size()) bad();
    ++i;
    return text.substr(begin, i - begin);
  };
  std::vector<std::pair<std::string, std::string>> members;
  skip_space();
  if (i >= text.size() || text[i] != '{') bad();
  ++i;
  skip_space();
  if (i < text.size() && text[i] == '}') return members;
  while (true) {
    skip_space();
    if (i >= text.size() || text[i] != '"') bad();
    const std::string key = string_token();
    skip_space();
    if (i >= text.size() || text[i] != ':') bad();
    ++i;
    skip_space();
    std::string value;
    if (i < text.size() && text[i] == '"') {
      value = string_token();
    } else {  // a number, true, false or null
      const size_t begin = i;
      while (i < text.size() && text[i] != ',' && text[i] != '}' && !std::isspace(static_cast<unsigned char>(text[i]))) {
        if (text[i] == '{' || text[i] == '[' || text[i] == '"') bad();
        ++i;
      }
      value = text.substr(begin, i - begin);
      if (value.empty()) bad();
    }
    members.emplace_back(key.substr(1, key.size() - 2), value);
    skip_space();
    if (i >= text.size()) bad();
    if (text[i] == '}') break;
    if (text[i] != ',') bad();
    ++i;
  }
  ++i;  // past the closing brace
  skip_space();
  if (i != text.size()) bad();
  return members;
}

std::optional<std::string> json_string_value(std::string_view literal) {
  if (literal.size() < 2 || literal.front() != '"' || literal.back() != '"') return std::nullopt;
  std::string text;
  for (size_t i = 1; i + 1 < literal.size(); ++i) {
    const char c = literal[i];
    if (c == '"') return std::nullopt;
    if (c != '\\') {
      text += c;
      continue;
    }
    if (++i >= literal.size() - 1) return std::nullopt;  // a backslash before the closing quote
    switch (literal[i]) {
      case '"': text += '"'; break;
      case '\\': text += '\\'; break;
      case '/': text += '/'; break;
      case 'n': text += '\n'; break;
      case 't': text += '\t'; break;
      case 'r': text += '\r'; break;
      case 'u': {  // json_quote writes only control characters this way
        unsigned code = 0;
        if (i + 5 > literal.size() - 1) return std::nullopt;
        const auto [end, ec] = std::from_chars(literal.data() + i + 1, literal.data() + i + 5, code, 16);
        if (ec != std::errc() || end != literal.data() + i + 5 || code >= 0x80) return std::nullopt;
        text += static_cast<char>(code);
        i += 4;
        break;
      }
      default: return std::nullopt;
    }
  }
  return text;
}

}  // namespace sb
