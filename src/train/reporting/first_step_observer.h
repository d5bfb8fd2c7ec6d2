// The process's first training step ends its start-up (core/startup_clock.h, FirstStepTimer): its part
// `first_step` is timed around that step.
#pragma once
#include <optional>

#include "core/startup_clock.h"
#include "train/run/train_observer.h"

namespace sb {

class FirstStepObserver final : public TrainObserver {
 public:
  void on_step_start(const StepInfo&) override { timer_.emplace(); }
  void on_step_end(const PhaseTimes&) override { timer_.reset(); }

 private:
  std::optional<FirstStepTimer> timer_;
};

}  // namespace sb
