// The optimizers scalebench knows, as an enum parsed once from the --optimizer name, and the defaults
// that differ between them. Every other place that needs a name or a default asks here.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"

namespace sb {

enum class OptimizerKind { Sgd, Adadelta, Adam, AdamW };

// The one table of the optimizers' canonical (lower-case) names, in enum order (core/enum_names.h).
std::span<const EnumName<OptimizerKind>> enum_names(OptimizerKind);

// The canonical (lower-case) name: "sgd", "adadelta", "adam", "adamw".
const char* optimizer_name(OptimizerKind kind);
// Every canonical name, in enum order, and the same as one string: "sgd, adadelta, adam, adamw".
const std::vector<std::string>& optimizer_names();
std::string optimizer_name_list();

// Names are matched without regard to case ("AdamW" is adamw). nullopt for an unknown name.
std::optional<OptimizerKind> find_optimizer_kind(std::string_view name);
// As find_optimizer_kind, but throws UserError naming the value and listing the valid names.
OptimizerKind parse_optimizer_kind(std::string_view name);

// torch.optim's defaults: learning rate 1e-3 (1.0 for Adadelta); weight decay 0 (1e-2 for AdamW);
// epsilon 1e-6 for Adadelta, 1e-8 for Adam and AdamW, 0 for SGD (which has none).
double default_learning_rate(OptimizerKind kind);
double default_weight_decay(OptimizerKind kind);
double default_eps(OptimizerKind kind);

// The per-optimizer defaults of one option, for --help: e.g. "0, adamw: 0.01" (the most common value
// first, then the optimizers that differ from it); optimizers with no such option are left out.
std::string defaults_by_optimizer(double (*default_of)(OptimizerKind), bool (*has_option)(OptimizerKind) = nullptr);
// Whether the optimizer reads an epsilon (all but SGD).
bool has_eps(OptimizerKind kind);

}  // namespace sb
