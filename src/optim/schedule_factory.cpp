#include "optim/schedule_factory.h"

#include <cctype>

#include "core/error.h"

namespace sb {

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names = {"none", "constant", "step", "cosine"};
  return names;
}

std::unique_ptr<LrSchedule> make_schedule(const std::string& name, double base_lr, const ScheduleOptions& o) {
  std::string key = name;
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (key == "none" || key == "constant") return std::make_unique<ConstantLr>(base_lr);
  if (key == "step") return std::make_unique<StepLr>(base_lr, o.step_size, o.gamma);
  if (key == "cosine") {
    CosineConfig c;
    c.warmup_epochs = o.warmup_epochs;
    c.total_epochs = o.total_epochs;
    c.start_factor = o.warmup_start_factor;
    c.min_lr = o.min_lr;
    return std::make_unique<WarmupCosineLr>(base_lr, c);
  }
  std::string valid;
  for (const std::string& n : schedule_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw UserError("Unknown learning-rate schedule '" + name + "'; valid schedules are " + valid + ".");
}

}  // namespace sb
