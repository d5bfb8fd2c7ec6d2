#include "train/run/early_stop.h"

#include <cstdio>

#include "train/train_config.h"

namespace sb {

StopRules stop_rules(const TrainConfig& config) {
  // --target-accuracy alone stops at the first evaluation that reaches it.
  return {config.target_accuracy, config.patience > 0 ? config.patience : 1, config.stop_after_no_improvement};
}

StopState after_evaluation(StopState state, double accuracy, const StopRules& rules) {
  if (accuracy > state.best_accuracy) {  // NaN is never better
    state.best_accuracy = accuracy;
    state.evaluations_without_improvement = 0;
  } else {
    ++state.evaluations_without_improvement;
  }
  const bool at_target = rules.target_accuracy > 0 && accuracy >= rules.target_accuracy;
  state.evaluations_at_target = at_target ? state.evaluations_at_target + 1 : 0;
  return state;
}

StopRule rule_met(const StopState& state, const StopRules& rules) {
  if (rules.target_accuracy > 0 && state.evaluations_at_target >= rules.patience) return StopRule::Target;
  if (rules.no_improvement > 0 && state.evaluations_without_improvement >= rules.no_improvement) return StopRule::NoImprovement;
  return StopRule::None;
}

StopPoint first_stop(std::span<const double> accuracies, const StopRules& rules) {
  StopState state;
  for (size_t i = 0; i < accuracies.size(); ++i) {
    state = after_evaluation(state, accuracies[i], rules);
    if (const StopRule rule = rule_met(state, rules); rule != StopRule::None) return {rule, i};
  }
  return {StopRule::None, accuracies.size()};
}

std::string stop_reason(StopRule rule, const StopRules& rules) {
  const auto evaluations = [](int n) { return std::to_string(n) + (n == 1 ? " evaluation" : " evaluations"); };
  switch (rule) {
    case StopRule::Target: {
      char target[32];
      std::snprintf(target, sizeof target, "%.2f%%", 100.0 * rules.target_accuracy);
      if (rules.patience == 1) return std::string("target accuracy ") + target + " reached (--target-accuracy)";
      return std::string("test accuracy at or above ") + target + " for " + evaluations(rules.patience) +
             " in a row (--target-accuracy, --patience)";
    }
    case StopRule::NoImprovement:
      return "no better test accuracy for " + evaluations(rules.no_improvement) + " (--stop-after-no-improvement)";
    case StopRule::None:
      break;
  }
  return "completed";
}

}  // namespace sb
