// The step timeline and the scaling built on it, on synthetic steps whose answers are known: no
// communication scales perfectly, a bucket that is ready only at the end of backward is not overlapped,
// communication past the end of backward is exposed, and a fixed serial part gives Amdahl's law.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "predict/scaling_prediction.h"
#include "predict/step_timeline.h"

namespace sb::predict {
namespace {

constexpr double kTol = 1e-12;

TEST(StepTimeline, NoBucketsIsTheComputeAlone) {
  const StepCompute c{0.3, 0.5, 0.2};
  const StepTimeline t = simulate_step(c, {});
  EXPECT_NEAR(t.step_s, 1.0, kTol);
  EXPECT_EQ(t.exposed_comm_s, 0.0);
  EXPECT_EQ(t.comm_s, 0.0);
}

TEST(StepTimeline, OneBucketReadyAtTheEndMatchesTheNoOverlapFormula) {
  // One bucket holds every gradient: it can start only when backward ends, so step = compute + comm.
  const StepCompute c{0.3, 0.5, 0.2};
  for (double comm : {0.01, 0.4, 3.0}) {
    const StepTimeline t = simulate_step(c, {{1.0, comm}});
    EXPECT_NEAR(t.step_s, c.total() + comm, kTol) << comm;
    EXPECT_NEAR(t.exposed_comm_s, comm, kTol) << comm;
  }
}

TEST(StepTimeline, ShortAllReducesHideBehindBackwardButTheLast) {
  // Backward 1 s; buckets ready at 25%, 50% and 100% of it, 0.1 s each: the first two finish inside
  // backward, the last starts at its end.
  const StepCompute c{0.0, 1.0, 0.0};
  const StepTimeline t = simulate_step(c, {{0.25, 0.1}, {0.5, 0.1}, {1.0, 0.1}});
  EXPECT_NEAR(t.exposed_comm_s, 0.1, kTol);
  EXPECT_NEAR(t.comm_s, 0.3, kTol);
  EXPECT_NEAR(t.step_s, 1.1, kTol);
}

TEST(StepTimeline, CommunicationLongerThanBackwardIsExposedPastIt) {
  // Each all-reduce outlasts the whole backward: the stream never idles after the first bucket is ready
  // (at 0.5 s), so everything after 1 s is exposed: 0.5 + 3 + 3 - 1.
  const StepCompute c{0.2, 1.0, 0.1};
  const StepTimeline t = simulate_step(c, {{0.5, 3.0}, {1.0, 3.0}});
  EXPECT_NEAR(t.exposed_comm_s, 5.5, kTol);
  EXPECT_NEAR(t.step_s, c.total() + 5.5, kTol);
}

TEST(StepTimeline, BucketsRunInTheirOrderOnOneStream) {
  // The second bucket is ready early but waits for the first one's all-reduce: 0.9 + 0.5 + 0.5 - 1.
  const StepCompute c{0.0, 1.0, 0.0};
  const StepTimeline t = simulate_step(c, {{0.9, 0.5}, {0.1, 0.5}});
  EXPECT_NEAR(t.exposed_comm_s, 0.9, kTol);
}

// A model of two tensors whose compute is `per_step(batch)` at each measured batch.
StepModel synthetic_model(const std::vector<ComputePoint>& points, RingLevel ring) {
  std::vector<ParamSpec> params(2);
  params[0].name = "a.weight";
  params[0].shape = Shape{1000};
  params[1].name = "b.weight";
  params[1].shape = Shape{3000};
  params[1].offset = 1000;
  GradientReadyCurve ready({{0, 1.0}, {1000, 0.5}}, 4000);
  AllreduceModel allreduce;
  allreduce.intra = ring;
  return StepModel{ComputeProfile(points), params, ready, allreduce, 4.0};
}

const RingLevel kFreeComm{0.0, std::numeric_limits<double>::infinity()};

TEST(ScalingPrediction, WithoutCommunicationWeakScalingIsPerfect) {
  const StepModel model = synthetic_model({{64, {0.02, 0.05, 0.01}}}, kFreeComm);
  for (int64_t gpus : {1, 2, 8, 1024}) {
    const auto p = predict_point(model, gpus, Scaling::Weak, 64, 25);
    ASSERT_TRUE(p);
    EXPECT_NEAR(p->efficiency, 1.0, kTol) << gpus;
    EXPECT_NEAR(p->images_per_s, static_cast<double>(gpus) * 64 / 0.08, 1e-6) << gpus;
    EXPECT_EQ(p->exposed_comm_fraction, 0.0);
  }
}

TEST(ScalingPrediction, CommunicationLowersWeakEfficiency) {
  const StepModel model = synthetic_model({{64, {0.02, 0.05, 0.01}}}, RingLevel{1e-3, 1e6});
  const auto two = predict_point(model, 2, Scaling::Weak, 64, 25);
  const auto eight = predict_point(model, 8, Scaling::Weak, 64, 25);
  ASSERT_TRUE(two && eight);
  EXPECT_LT(two->efficiency, 1.0);
  EXPECT_LT(eight->efficiency, two->efficiency);  // the ring's 2(n-1) latency steps grow with n
  EXPECT_NEAR(two->efficiency, 0.08 / two->step_s, kTol);
  EXPECT_GT(two->exposed_comm_fraction, 0.0);
}

TEST(ScalingPrediction, StrongScalingWithAFixedSerialPartIsAmdahlsLaw) {
  // Compute per step = s + c*b, measured at the per-GPU batches strong scaling of 256 needs; the serial
  // part s does not shrink with the batch, so the speedup on N GPUs is 1 / (f + (1 - f) / N).
  const double s = 0.004, c = 1e-4;
  const int64_t global = 256;
  std::vector<ComputePoint> points;
  for (int64_t b : {32, 64, 128, 256}) points.push_back({b, {s, c * static_cast<double>(b), 0.0}});
  const StepModel model = synthetic_model(points, kFreeComm);
  const double f = s / (s + c * global);
  for (int64_t gpus : {1, 2, 4, 8}) {
    const auto p = predict_point(model, gpus, Scaling::Strong, global, 25);
    ASSERT_TRUE(p);
    const double amdahl = 1.0 / (f + (1 - f) / static_cast<double>(gpus));
    EXPECT_NEAR(p->efficiency * static_cast<double>(gpus), amdahl, 1e-9) << gpus;
  }
  // 16 GPUs need batch 16 per GPU, which was not measured: no prediction rather than a guess.
  EXPECT_FALSE(predict_point(model, 16, Scaling::Strong, global, 25));
}

TEST(ScalingPrediction, WithoutOverlapTheWholeGradientIsOneAllReduceAfterBackward) {
  // The CPU engine's step: compute, then one all-reduce of the 4000 fp32 gradients, whatever the bucket size.
  StepModel model = synthetic_model({{64, {0.02, 0.05, 0.01}}}, RingLevel{1e-4, 1e7});
  model.buckets_overlap_backward = false;
  const double allreduce = ring_allreduce_seconds(model.allreduce.intra, 4, 16000);
  for (double mib : {0.001, 25.0}) {
    const auto p = predict_point(model, 4, Scaling::Weak, 64, mib);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->buckets, 1);
    EXPECT_NEAR(p->step_s, 0.08 + allreduce, kTol) << mib;
    EXPECT_NEAR(p->exposed_comm_fraction, allreduce / (0.08 + allreduce), kTol) << mib;
  }
}

TEST(ScalingPrediction, TheBestBucketSizeIsTheFastest) {
  const StepModel model = synthetic_model({{64, {0.02, 0.05, 0.01}}}, RingLevel{1e-5, 1e8});
  const std::vector<double> sizes{0.001, 0.01, 1.0};
  const auto best = best_bucket_point(model, 8, Scaling::Weak, 64, sizes);
  ASSERT_TRUE(best);
  for (double mib : sizes) EXPECT_LE(best->step_s, predict_point(model, 8, Scaling::Weak, 64, mib)->step_s) << mib;
}

TEST(ScalingPrediction, ExposedShareThresholdIsTheFirstCountThatReachesIt) {
  const StepModel model = synthetic_model({{64, {0.02, 0.05, 0.01}}}, RingLevel{2e-4, 1e9});
  const auto first = first_gpus_with_exposed_share(model, Scaling::Weak, 64, 25, 1024, 0.05);
  ASSERT_TRUE(first);
  EXPECT_GE(predict_point(model, *first, Scaling::Weak, 64, 25)->exposed_comm_fraction, 0.05);
  if (*first > 2) {
    EXPECT_LT(predict_point(model, *first - 1, Scaling::Weak, 64, 25)->exposed_comm_fraction, 0.05);
  }
  EXPECT_FALSE(first_gpus_with_exposed_share(synthetic_model({{64, {0.02, 0.05, 0.01}}}, kFreeComm), Scaling::Weak, 64, 25, 64, 0.05));
}

}  // namespace
}  // namespace sb::predict
