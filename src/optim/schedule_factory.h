// Builds a learning-rate schedule from its name and the user's options (the CLI's --lr-schedule).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "optim/schedule.h"

namespace sb {

// The union of every schedule's options; each schedule reads the ones it has.
struct ScheduleOptions {
  int64_t step_size = 30;           // step: epochs between decays
  double gamma = 0.1;               // step: decay factor
  double warmup_epochs = 0.0;       // cosine
  double warmup_start_factor = 0.0;  // cosine
  int64_t total_epochs = 0;         // cosine: the length of the run
  double min_lr = 0.0;              // cosine
};

// "none", "constant", "step", "cosine" ("none" is "constant").
const std::vector<std::string>& schedule_names();

// Throws UserError naming the unknown value and listing the valid ones, or for an out-of-range option.
// The name is matched without regard to case.
std::unique_ptr<LrSchedule> make_schedule(const std::string& name, double base_lr, const ScheduleOptions& options);

}  // namespace sb
