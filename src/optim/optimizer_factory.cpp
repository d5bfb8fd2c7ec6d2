#include "optim/optimizer_factory.h"

#include "optim/adadelta.h"
#include "optim/adam.h"
#include "optim/sgd.h"

namespace sb {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerSpec& spec, int64_t n) {
  switch (spec.kind) {
    case OptimizerKind::Sgd: return std::make_unique<Sgd>(n, sgd_config(spec));
    case OptimizerKind::Adadelta: return std::make_unique<Adadelta>(n, adadelta_config(spec));
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: return std::make_unique<Adam>(n, adam_config(spec));
  }
  return nullptr;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const OptimizerOptions& options, int64_t n) {
  return make_optimizer(resolve_optimizer_spec(parse_optimizer_kind(name), options), n);
}

double default_learning_rate(const std::string& name) { return default_learning_rate(parse_optimizer_kind(name)); }

}  // namespace sb
