// The early-stopping rules over the test accuracies after each epoch.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "train/run/early_stop.h"
#include "train/train_config.h"

namespace sb {
namespace {

StopPoint stop(const std::vector<double>& accuracies, StopRules rules) { return first_stop(accuracies, rules); }

TEST(EarlyStop, TheTargetMustHoldForPatienceEvaluationsInARow) {
  const StopRules rules{.target_accuracy = 0.95, .patience = 2};
  // Reached once, then lost: the streak starts again.
  const StopPoint p = stop({0.90, 0.96, 0.94, 0.95, 0.97, 0.99}, rules);
  EXPECT_EQ(p.rule, StopRule::Target);
  EXPECT_EQ(p.evaluation, 4u);
  EXPECT_EQ(stop({0.96, 0.94, 0.96, 0.94}, rules).rule, StopRule::None);
  EXPECT_EQ(stop({0.96, 0.94, 0.96, 0.94}, rules).evaluation, 4u);
}

TEST(EarlyStop, ATargetWithoutPatienceStopsAtTheFirstEvaluationReachingIt) {
  TrainConfig config;
  config.target_accuracy = 0.9;
  const StopRules rules = stop_rules(config);
  EXPECT_EQ(rules.patience, 1);
  const StopPoint p = stop({0.5, 0.9, 0.95}, rules);
  EXPECT_EQ(p.rule, StopRule::Target);
  EXPECT_EQ(p.evaluation, 1u);
  EXPECT_EQ(stop_reason(p.rule, rules), "target accuracy 90.00% reached (--target-accuracy)");
}

TEST(EarlyStop, PatienceDoesNotStopARunBelowTheTarget) {
  // The accuracy stalls below the target: the improvement rule is not what --patience asks for.
  const StopRules rules{.target_accuracy = 0.95, .patience = 2};
  EXPECT_EQ(stop({0.80, 0.81, 0.81, 0.81, 0.80, 0.79}, rules).rule, StopRule::None);
  EXPECT_EQ(stop_reason(StopRule::Target, rules), "test accuracy at or above 95.00% for 2 evaluations in a row (--target-accuracy, --patience)");
}

TEST(EarlyStop, NoImprovementCountsEvaluationsWithoutABetterAccuracy) {
  const StopRules rules{.no_improvement = 2};
  const StopPoint p = stop({0.5, 0.6, 0.6, 0.7, 0.65, 0.7, 0.9}, rules);
  EXPECT_EQ(p.rule, StopRule::NoImprovement);
  EXPECT_EQ(p.evaluation, 5u);
  EXPECT_EQ(stop_reason(p.rule, rules), "no better test accuracy for 2 evaluations (--stop-after-no-improvement)");
  EXPECT_EQ(stop({0.5, 0.6, 0.7}, rules).rule, StopRule::None);
  EXPECT_EQ(stop({0.5, 0.6, 0.7}, StopRules{}).rule, StopRule::None);  // no rule: never stops
}

TEST(EarlyStop, TheTargetWinsWhenBothRulesHold) {
  const StopRules rules{.target_accuracy = 0.5, .patience = 2, .no_improvement = 1};
  const StopPoint p = stop({0.6, 0.55}, rules);
  EXPECT_EQ(p.rule, StopRule::Target);
  EXPECT_EQ(p.evaluation, 1u);
}

TEST(EarlyStop, AResumedStateContinuesTheStreak) {
  const StopRules rules{.target_accuracy = 0.9, .patience = 3};
  StopState state;
  for (double a : {0.91, 0.92}) state = after_evaluation(state, a, rules);
  EXPECT_EQ(state.evaluations_at_target, 2);
  EXPECT_EQ(rule_met(state, rules), StopRule::None);
  state = after_evaluation(state, 0.93, rules);  // after a resume from a checkpoint holding `state`
  EXPECT_EQ(rule_met(state, rules), StopRule::Target);
  EXPECT_EQ(state.best_accuracy, 0.93);
}

TEST(EarlyStop, PatienceWithoutATargetIsRefusedWithTheOtherRuleAsHint) {
  TrainConfig config;
  config.patience = 2;
  try {
    config.validate();
    FAIL() << "--patience without --target-accuracy was accepted";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("--patience 2"), std::string::npos) << message;
    EXPECT_NE(message.find("--target-accuracy"), std::string::npos) << message;
    EXPECT_NE(message.find("--stop-after-no-improvement 2"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace sb
