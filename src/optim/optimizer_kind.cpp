#include "optim/optimizer_kind.h"

#include "core/error.h"
#include "optim/optim_config.h"
#include "optim/option_checks.h"

namespace sb {

std::span<const EnumName<OptimizerKind>> enum_names(OptimizerKind) {
  static constexpr EnumName<OptimizerKind> names[] = {
      {OptimizerKind::Sgd, "sgd"}, {OptimizerKind::Adadelta, "adadelta"}, {OptimizerKind::Adam, "adam"}, {OptimizerKind::AdamW, "adamw"}};
  return names;
}

const char* optimizer_name(OptimizerKind kind) { return name_of(kind); }

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const EnumName<OptimizerKind>& row : enum_names(OptimizerKind{})) all.emplace_back(row.name);
    return all;
  }();
  return names;
}

std::optional<OptimizerKind> find_optimizer_kind(std::string_view name) { return find_by_name<OptimizerKind>(name); }

std::string optimizer_name_list() { return name_list<OptimizerKind>(); }

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
  for (const EnumName<OptimizerKind>& row : enum_names(OptimizerKind{}))
    if (!has_option || has_option(row.value)) kinds.push_back(row.value);
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
