#include "optim/schedule.h"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "optim/option_checks.h"

namespace sb {

LrSchedule::LrSchedule(double base_lr) : base_lr_(base_lr) {
  require_option(base_lr >= 0.0 && std::isfinite(base_lr), "The", "learning rate", "finite and >= 0", base_lr);
}

double LrSchedule::lr(int64_t epoch, int64_t step_in_epoch, int64_t steps_per_epoch) const {
  if (epoch < 0 || steps_per_epoch < 1 || step_in_epoch < 0 || step_in_epoch >= steps_per_epoch)
    throw std::invalid_argument("LrSchedule::lr: bad position epoch " + std::to_string(epoch) + ", step " +
                                std::to_string(step_in_epoch) + " of " + std::to_string(steps_per_epoch));
  return lr_at(epoch, step_in_epoch, steps_per_epoch);
}

StepLr::StepLr(double base_lr, int64_t step_size, double gamma)
    : LrSchedule(base_lr), step_size_(step_size), gamma_(gamma) {
  require_option(step_size >= 1, "StepLR", "step size", ">= 1", static_cast<double>(step_size));
  require_option(gamma > 0.0 && std::isfinite(gamma), "StepLR", "gamma", "finite and > 0", gamma);
}

double StepLr::lr_at(int64_t epoch, int64_t, int64_t) const {
  return base_lr_ * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

double warmup_cosine_lr(double base_lr, double min_lr, double start_factor, int64_t step, int64_t warmup_steps,
                        int64_t total_steps) {
  if (step < warmup_steps) {
    const double fraction = static_cast<double>(step) / static_cast<double>(warmup_steps);
    return base_lr * (start_factor + (1.0 - start_factor) * fraction);
  }
  if (step >= total_steps) return min_lr;
  const double progress = static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps);
  return min_lr + (base_lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

WarmupCosineLr::WarmupCosineLr(double base_lr, const CosineConfig& c) : LrSchedule(base_lr), config_(c) {
  require_option(c.total_epochs >= 1, "Cosine schedule", "total epochs", ">= 1", static_cast<double>(c.total_epochs));
  require_option(c.warmup_epochs >= 0.0 && c.warmup_epochs <= static_cast<double>(c.total_epochs), "Cosine schedule",
                 "warm-up epochs", "in [0, total epochs = " + std::to_string(c.total_epochs) + "]", c.warmup_epochs);
  require_option(c.start_factor >= 0.0 && c.start_factor <= 1.0, "Cosine schedule", "warm-up start factor",
                 "in [0, 1]", c.start_factor);
  require_option(c.min_lr >= 0.0 && c.min_lr <= base_lr, "Cosine schedule", "minimum learning rate",
                 "in [0, base learning rate = " + format_option_value(base_lr) + "]", c.min_lr);
}

double WarmupCosineLr::lr_at(int64_t epoch, int64_t step_in_epoch, int64_t steps_per_epoch) const {
  const int64_t warmup = std::llround(config_.warmup_epochs * static_cast<double>(steps_per_epoch));
  const int64_t total = config_.total_epochs * steps_per_epoch;
  return warmup_cosine_lr(base_lr_, config_.min_lr, config_.start_factor, epoch * steps_per_epoch + step_in_epoch,
                          warmup, total);
}

double linear_scaled_lr(double base_lr, int64_t world_size) {
  if (world_size < 1) throw std::invalid_argument("linear_scaled_lr: world size " + std::to_string(world_size));
  return base_lr * static_cast<double>(world_size);
}

}  // namespace sb
