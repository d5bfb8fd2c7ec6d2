// Builds a CPU optimizer from a resolved spec (optimizer_spec.h), or from a name and the user's options.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "optim/optimizer.h"
#include "optim/optimizer_spec.h"

namespace sb {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerSpec& spec, int64_t n);

// parse_optimizer_kind(name) (any case), then resolve_optimizer_spec: throws UserError naming an unknown
// name and listing the valid ones, or for an out-of-range option.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const OptimizerOptions& options, int64_t n);

// torch.optim's default learning rate of the named optimizer: 1e-3, except 1.0 for adadelta.
double default_learning_rate(const std::string& name);

}  // namespace sb
