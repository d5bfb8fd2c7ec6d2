#include "optim/optimizer_kind.h"

#include <cctype>

#include "core/error.h"
#include "optim/optim_config.h"
#include "optim/option_checks.h"

namespace sb {

namespace {
constexpr OptimizerKind kKinds[] = {OptimizerKind::Sgd, OptimizerKind::Adadelta, OptimizerKind::Adam, OptimizerKind::AdamW};

bool same_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}
}  // namespace

const char* optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::Sgd: return "sgd";
    case OptimizerKind::Adadelta: return "adadelta";
    case OptimizerKind::Adam: return "adam";
    case OptimizerKind::AdamW: return "adamw";
  }
  return "?";
}

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (OptimizerKind kind : kKinds) all.emplace_back(optimizer_name(kind));
    return all;
  }();
  return names;
}

std::optional<OptimizerKind> find_optimizer_kind(std::string_view name) {
  for (OptimizerKind kind : kKinds)
    if (same_ignoring_case(name, optimizer_name(kind))) return kind;
  return std::nullopt;
}

std::string optimizer_name_list() {
  std::string list;
  for (const std::string& n : optimizer_names()) list += (list.empty() ? "" : ", ") + n;
  return list;
}

OptimizerKind parse_optimizer_kind(std::string_view name) {
  if (const auto kind = find_optimizer_kind(name)) return *kind;
  throw UserError("Unknown optimizer '" + std::string(name) + "'; valid optimizers are " + optimizer_name_list() + ".");
}

// The defaults come from the config structs of optim_config.h, which hold torch's values.
double default_learning_rate(OptimizerKind kind) { return kind == OptimizerKind::Adadelta ? 1.0 : 1e-3; }

double default_weight_decay(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::Sgd: return SgdConfig{}.weight_decay;
    case OptimizerKind::Adadelta: return AdadeltaConfig{}.weight_decay;
    case OptimizerKind::Adam: return AdamConfig{}.weight_decay;
    case OptimizerKind::AdamW: return adamw_config().weight_decay;
  }
  return 0.0;
}

double default_eps(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::Sgd: return 0.0;
    case OptimizerKind::Adadelta: return AdadeltaConfig{}.eps;
    case OptimizerKind::Adam: return AdamConfig{}.eps;
    case OptimizerKind::AdamW: return adamw_config().eps;
  }
  return 0.0;
}

bool has_eps(OptimizerKind kind) { return kind != OptimizerKind::Sgd; }

std::string defaults_by_optimizer(double (*default_of)(OptimizerKind), bool (*has_option)(OptimizerKind)) {
  std::vector<OptimizerKind> kinds;
  for (OptimizerKind kind : kKinds)
    if (!has_option || has_option(kind)) kinds.push_back(kind);
  // The value most optimizers share (the first one on a tie) leads; the others are named.
  double common = default_of(kinds.front());
  size_t best = 0;
  for (OptimizerKind candidate : kinds) {
    size_t count = 0;
    for (OptimizerKind kind : kinds) count += default_of(kind) == default_of(candidate);
    if (count > best) best = count, common = default_of(candidate);
  }
  std::string text = format_option_value(common);
  for (OptimizerKind kind : kinds)
    if (default_of(kind) != common) text += std::string(", ") + optimizer_name(kind) + ": " + format_option_value(default_of(kind));
  return text;
}

}  // namespace sb
