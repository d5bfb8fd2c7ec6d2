#include "optim/optimizer.h"

#include <cmath>
#include <stdexcept>

namespace sb {

Optimizer::Optimizer(int64_t n) : n_(n) {
  if (n < 0) throw std::invalid_argument("Optimizer: negative parameter count " + std::to_string(n));
}

void Optimizer::step(float* params, const float* grads, double lr) {
  // The schedule already validated the user's learning rate; a bad one here is a bug in the caller.
  if (!(lr >= 0.0) || !std::isfinite(lr))
    throw std::invalid_argument(std::string(name()) + ": learning rate must be finite and >= 0, got " +
                                std::to_string(lr));
  update(params, grads, lr, step_count_ + 1);
  ++step_count_;
}

void Optimizer::set_step_count(int64_t steps) {
  if (steps < 0) throw std::invalid_argument("Optimizer: negative step count " + std::to_string(steps));
  step_count_ = steps;
}

}  // namespace sb
