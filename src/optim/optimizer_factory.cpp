#include "optim/optimizer_factory.h"

#include <cctype>

#include "core/error.h"
#include "optim/adadelta.h"
#include "optim/adam.h"
#include "optim/sgd.h"

namespace sb {

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

[[noreturn]] void unknown_optimizer(const std::string& name) {
  std::string valid;
  for (const std::string& n : optimizer_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw UserError("Unknown optimizer '" + name + "'; valid optimizers are " + valid + ".");
}
}  // namespace

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {"sgd", "adadelta", "adam", "adamw"};
  return names;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const OptimizerOptions& o, int64_t n) {
  const std::string key = lower(name);
  if (key == "sgd") {
    SgdConfig c;
    c.momentum = o.momentum;
    c.dampening = o.dampening;
    c.nesterov = o.nesterov;
    c.weight_decay = o.weight_decay.value_or(c.weight_decay);
    return std::make_unique<Sgd>(n, c);
  }
  if (key == "adadelta") {
    AdadeltaConfig c;
    c.rho = o.rho;
    c.eps = o.eps.value_or(c.eps);
    c.weight_decay = o.weight_decay.value_or(c.weight_decay);
    return std::make_unique<Adadelta>(n, c);
  }
  if (key == "adam" || key == "adamw") {
    AdamConfig c = key == "adamw" ? adamw_config() : AdamConfig{};
    c.beta1 = o.beta1;
    c.beta2 = o.beta2;
    c.amsgrad = o.amsgrad;
    c.eps = o.eps.value_or(c.eps);
    c.weight_decay = o.weight_decay.value_or(c.weight_decay);
    return std::make_unique<Adam>(n, c);
  }
  unknown_optimizer(name);
}

double default_learning_rate(const std::string& name) {
  const std::string key = lower(name);
  if (key == "adadelta") return 1.0;
  if (key == "sgd" || key == "adam" || key == "adamw") return 1e-3;
  unknown_optimizer(name);
}

}  // namespace sb
