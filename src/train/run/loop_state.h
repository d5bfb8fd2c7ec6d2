// Where the training loop stands between two steps: what a checkpoint records beside the model, and what
// a resume starts from.
#pragma once
#include <cstdint>
#include <limits>

#include "train/run/early_stop.h"

namespace sb {

struct LoopState {
  int epoch = 0;               // the next epoch to run
  int64_t step_in_epoch = 0;   // the next step of that epoch
  int64_t global_step = 0;
  double elapsed_s = 0;        // training plus evaluation time so far (time to accuracy)
  StopState stop;             // what the early-stopping rules remember of the accuracies
  double target_reached_s = std::numeric_limits<double>::quiet_NaN();  // elapsed_s when the target was first reached
};

}  // namespace sb
