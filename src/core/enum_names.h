// Names of an enum's values for the command line and the configuration JSON: each enum has one table
// of {value, name} rows, returned by an overload of enum_names(E) found by argument-dependent lookup,
// and these templates answer every question about the names from it.
#pragma once
#include <cctype>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sb {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

// The name of `value`; "?" for a value outside the table.
template <class E>
const char* name_of(E value) {
  for (const EnumName<E>& row : enum_names(E{}))
    if (row.value == value) return row.name;
  return "?";
}

// The value named `name`, matched without regard to case; nullopt for an unknown name.
template <class E>
std::optional<E> find_by_name(std::string_view name) {
  const auto same = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
    return true;
  };
  for (const EnumName<E>& row : enum_names(E{}))
    if (same(name, row.name)) return row.value;
  return std::nullopt;
}

// Every name in table order, joined by `separator`: "cpu, cuda".
template <class E>
std::string name_list(const char* separator = ", ") {
  std::string list;
  for (const EnumName<E>& row : enum_names(E{})) list += (list.empty() ? "" : separator) + std::string(row.name);
  return list;
}

}  // namespace sb
