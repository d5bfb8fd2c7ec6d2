// When the CUDA engine captures its step as a graph and when it replays it (StepGraphPolicy): after the
// eager full steps the plans and buffers need, only for full batches, never again after a refused
// capture, and again at the next full step after the graphs were dropped.
#include <gtest/gtest.h>

#include "train/engines/cuda/step_graph_policy.h"

namespace sb::cuda {
namespace {

constexpr int64_t kFull = 32;
constexpr int64_t kPartial = 7;

// Runs `steps` full steps the way the engine does: capture when told, then replay or run eagerly.
// Returns how many of them the graphs replayed.
int run_full_steps(StepGraphPolicy& policy, int steps) {
  int replayed = 0;
  for (int k = 0; k < steps; ++k) {
    if (policy.should_capture(kFull)) policy.captured(kFull);
    if (policy.replays(kFull)) {
      ++replayed;
    } else {
      policy.ran_eagerly(kFull);
    }
  }
  return replayed;
}

TEST(StepGraphPolicy, CapturesAfterTheEagerWarmUpSteps) {
  StepGraphPolicy policy(true, kFull);
  for (int k = 0; k < kEagerStepsBeforeCapture; ++k) {
    EXPECT_FALSE(policy.should_capture(kFull)) << "eager step " << k;
    EXPECT_FALSE(policy.replays(kFull));
    policy.ran_eagerly(kFull);
  }
  EXPECT_TRUE(policy.should_capture(kFull));
  policy.captured(kFull);
  EXPECT_TRUE(policy.has_graphs());
  EXPECT_TRUE(policy.replays(kFull));
  EXPECT_FALSE(policy.should_capture(kFull)) << "captured once, replayed from then on";
}

TEST(StepGraphPolicy, ReplaysEveryFullStepAfterTheWarmUp) {
  StepGraphPolicy policy(true, kFull);
  EXPECT_EQ(run_full_steps(policy, 10), 10 - kEagerStepsBeforeCapture);
}

TEST(StepGraphPolicy, DisabledNeverCaptures) {
  StepGraphPolicy policy(false, kFull);
  EXPECT_EQ(run_full_steps(policy, 10), 0);
  EXPECT_FALSE(policy.has_graphs());
}

TEST(StepGraphPolicy, PartialBatchesRunEagerlyAndDoNotCountAsWarmUp) {
  StepGraphPolicy policy(true, kFull);
  for (int k = 0; k < 5; ++k) {
    EXPECT_FALSE(policy.should_capture(kPartial));
    policy.ran_eagerly(kPartial);
  }
  EXPECT_FALSE(policy.should_capture(kFull)) << "partial steps are no warm-up for the full step";
  EXPECT_EQ(run_full_steps(policy, 3), 3 - kEagerStepsBeforeCapture);
  EXPECT_FALSE(policy.replays(kPartial)) << "the graphs hold the full batch's shapes";
  EXPECT_FALSE(policy.should_capture(kPartial));
}

TEST(StepGraphPolicy, ARefusedCaptureIsFinal) {
  StepGraphPolicy policy(true, kFull);
  run_full_steps(policy, kEagerStepsBeforeCapture);
  ASSERT_TRUE(policy.should_capture(kFull));
  policy.capture_failed();
  EXPECT_FALSE(policy.has_graphs());
  EXPECT_EQ(run_full_steps(policy, 5), 0);
}

TEST(StepGraphPolicy, DroppedGraphsAreCapturedAgainAtTheNextFullStep) {
  StepGraphPolicy policy(true, kFull);
  run_full_steps(policy, kEagerStepsBeforeCapture + 1);
  ASSERT_TRUE(policy.has_graphs());
  policy.dropped();
  EXPECT_FALSE(policy.replays(kFull));
  EXPECT_FALSE(policy.should_capture(kPartial));
  EXPECT_TRUE(policy.should_capture(kFull)) << "no new warm-up: the plans exist and the buffers have grown";
}

}  // namespace
}  // namespace sb::cuda
