// Learning-rate schedules. The trainer asks for the rate of every step, from the epoch, the step within
// it and the steps per epoch, so a schedule can be per epoch (StepLR) or per step (warm-up + cosine).
// Epochs and steps count from 0. docs/optimizers.md states each formula.
#pragma once
#include <cstdint>

namespace sb {

class LrSchedule {
 public:
  // Throws UserError unless base_lr is finite and >= 0.
  explicit LrSchedule(double base_lr);
  virtual ~LrSchedule() = default;

  // The rate for step `step_in_epoch` of epoch `epoch`. Needs epoch >= 0, steps_per_epoch >= 1 and
  // 0 <= step_in_epoch < steps_per_epoch (std::invalid_argument otherwise: a bug in the caller).
  double lr(int64_t epoch, int64_t step_in_epoch, int64_t steps_per_epoch) const;
  virtual const char* name() const = 0;
  double base_lr() const { return base_lr_; }

 protected:
  virtual double lr_at(int64_t epoch, int64_t step_in_epoch, int64_t steps_per_epoch) const = 0;
  double base_lr_;
};

// lr = base_lr always.
class ConstantLr final : public LrSchedule {
 public:
  explicit ConstantLr(double base_lr) : LrSchedule(base_lr) {}
  const char* name() const override { return "constant"; }

 protected:
  double lr_at(int64_t, int64_t, int64_t) const override { return base_lr_; }
};

// torch's StepLR stepped once per epoch: lr = base_lr * gamma^(epoch / step_size) (integer division).
class StepLr final : public LrSchedule {
 public:
  // Throws UserError unless step_size >= 1 and gamma > 0.
  StepLr(double base_lr, int64_t step_size, double gamma);
  const char* name() const override { return "step"; }

 protected:
  double lr_at(int64_t epoch, int64_t, int64_t) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// The warm-up + cosine curve over global steps s (see WarmupCosineLr), as a pure function:
//   s < W:       base * (f + (1 - f) * s / W)               (linear from f * base towards base)
//   W <= s < T:  min + (base - min) * (1 + cos(pi * (s - W) / (T - W))) / 2
//   s >= T:      min
double warmup_cosine_lr(double base_lr, double min_lr, double start_factor, int64_t step, int64_t warmup_steps,
                        int64_t total_steps);

struct CosineConfig {
  double warmup_epochs = 0.0;  // may be fractional; W = round(warmup_epochs * steps_per_epoch)
  int64_t total_epochs = 0;    // T = total_epochs * steps_per_epoch; warm-up included
  double start_factor = 0.0;   // the warm-up starts at start_factor * base_lr
  double min_lr = 0.0;         // the rate at the end of the cosine
};

// Linear warm-up, then cosine annealing to min_lr, per step (s = epoch * steps_per_epoch + step_in_epoch).
// Equals torch's LinearLR(start_factor, total_iters=W) followed by CosineAnnealingLR(T_max=T-W, eta_min).
class WarmupCosineLr final : public LrSchedule {
 public:
  // Throws UserError unless total_epochs >= 1, 0 <= warmup_epochs <= total_epochs,
  // 0 <= start_factor <= 1 and 0 <= min_lr <= base_lr.
  WarmupCosineLr(double base_lr, const CosineConfig& config);
  const char* name() const override { return "cosine"; }

 protected:
  double lr_at(int64_t epoch, int64_t step_in_epoch, int64_t steps_per_epoch) const override;

 private:
  CosineConfig config_;
};

// The linear scaling rule of Goyal et al. (2017): with k ranks (k times the global batch), use k times
// the single-rank learning rate. Throws std::invalid_argument when world_size < 1.
double linear_scaled_lr(double base_lr, int64_t world_size);

}  // namespace sb
