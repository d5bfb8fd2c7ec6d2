// The early-stopping rules, as pure functions of the test accuracies after each epoch, so that the
// trainer, a resume (which restarts from a StopState) and the tests share one definition.
#pragma once
#include <span>
#include <string>

namespace sb {

struct TrainConfig;

struct StopRules {
  double target_accuracy = 0;  // 0: no target
  int patience = 1;            // evaluations in a row at or above the target that end the run
  int no_improvement = 0;      // evaluations without a better accuracy that end the run (0: off)
};
StopRules stop_rules(const TrainConfig& config);

// What the rules need to remember of the accuracies so far; a checkpoint records it.
struct StopState {
  double best_accuracy = 0;
  int evaluations_without_improvement = 0;
  int evaluations_at_target = 0;  // the latest evaluations in a row at or above the target
};

enum class StopRule { None, Target, NoImprovement };

// The state after one more evaluation of `accuracy`.
StopState after_evaluation(StopState state, double accuracy, const StopRules& rules);
// The rule that ends the run in `state`; the target wins when both hold.
StopRule rule_met(const StopState& state, const StopRules& rules);

// The rule that stops a run with these accuracies, and the evaluation (0-based) it stops after;
// {None, size} when the run goes on.
struct StopPoint {
  StopRule rule = StopRule::None;
  size_t evaluation = 0;
};
StopPoint first_stop(std::span<const double> accuracies, const StopRules& rules);

// "test accuracy at or above 95.00% for 2 evaluations (--target-accuracy, --patience)", ...
std::string stop_reason(StopRule rule, const StopRules& rules);

}  // namespace sb
