// The step timeline and the scaling built on it, on synthetic steps whose answers are known: no
// communication scales perfectly, a bucket that is ready only at the end of backward is not overlapped,
// communication past the end of backward is exposed, and a fixed serial part gives Amdahl's law; with
// contention, backward slows exactly while an all-reduce runs beside it, and the ready times move with it;
// a wait after backward is exposed whatever the all-reduces hide.
#include <gtest/gtest.h>

#include <algorithm>
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

// The timeline before contention was modelled: each bucket ready at its fraction of backward's time.
double step_without_interaction(const StepCompute& c, const std::vector<BucketComm>& buckets) {
  double stream_free = 0;
  for (const BucketComm& b : buckets) stream_free = std::max(stream_free, b.ready_fraction * c.backward_s) + b.seconds;
  return c.total() + std::max(0.0, stream_free - c.backward_s);
}

TEST(StepTimeline, NoContentionIsTheTimelineWithoutInteraction) {
  const StepCompute c{0.2, 1.0, 0.1};
  const std::vector<std::vector<BucketComm>> cases = {
      {{0.25, 0.1}, {0.5, 0.1}, {1.0, 0.1}}, {{0.5, 3.0}, {1.0, 3.0}}, {{0.9, 0.5}, {0.1, 0.5}}, {{0.1, 0.05}, {0.3, 0.4}, {0.35, 0.01}}};
  for (const auto& buckets : cases) {
    const StepTimeline t = simulate_step(c, buckets, Overlap{0.0, 1.0});
    EXPECT_NEAR(t.step_s, step_without_interaction(c, buckets), kTol);
    EXPECT_NEAR(t.contention_s, 0.0, kTol);
  }
}

TEST(StepTimeline, ContentionSlowsBackwardOnlyWhileAnAllReduceRuns) {
  // Backward 1 s of work; the bucket ready at half of it all-reduces from 0.5 s to 0.7 s, when backward
  // runs at 1 / 1.5 of its speed: it does 0.2 / 1.5 of work there and ends at 0.7 + (0.5 - 0.2 / 1.5).
  const StepCompute c{0.3, 1.0, 0.2};
  const StepTimeline t = simulate_step(c, {{0.5, 0.2}}, Overlap{0.5, 1.0});
  const double backward_end = 0.7 + (0.5 - 0.2 / 1.5);
  EXPECT_NEAR(t.contention_s, backward_end - 1.0, kTol);
  EXPECT_NEAR(t.exposed_comm_s, 0.0, kTol);
  EXPECT_NEAR(t.step_s, c.total() + backward_end - 1.0, kTol);
}

TEST(StepTimeline, ContentionMovesTheLaterBucketsReadyTimes) {
  // c = 1: backward at half speed beside an all-reduce. Bucket A (ready after 25% of the work) runs
  // 0.25..0.75 s, in which backward reaches 50% of its work; B is ready at 60%, at 0.85 s (not 0.6 s),
  // runs to 0.95 s (backward reaches 65%), and backward ends at 0.95 + 0.35 = 1.3 s.
  const StepCompute c{0.0, 1.0, 0.0};
  const StepTimeline t = simulate_step(c, {{0.25, 0.5}, {0.6, 0.1}}, Overlap{1.0, 1.0});
  EXPECT_NEAR(t.contention_s, 0.3, kTol);
  EXPECT_NEAR(t.exposed_comm_s, 0.0, kTol);
  EXPECT_NEAR(t.step_s, 1.3, kTol);
  // A longer B outlasts backward: it starts at 0.85 s, backward ends at 0.85 + 2 x 0.4 = 1.65 s, B at 2.85 s.
  const StepTimeline longer = simulate_step(c, {{0.25, 0.5}, {0.6, 2.0}}, Overlap{1.0, 1.0});
  EXPECT_NEAR(longer.contention_s, 0.65, kTol);
  EXPECT_NEAR(longer.exposed_comm_s, 1.2, kTol);
  EXPECT_NEAR(longer.step_s, 2.85, kTol);
}

TEST(StepTimeline, OneBucketReadyAtTheEndIsComputePlusCommWhateverTheContention) {
  const StepCompute c{0.3, 0.5, 0.2};
  for (double contention : {0.0, 0.5, 3.0}) {
    const StepTimeline t = simulate_step(c, {{1.0, 0.4}}, Overlap{contention, 1.0});
    EXPECT_NEAR(t.step_s, c.total() + 0.4, kTol) << contention;
    EXPECT_EQ(t.contention_s, 0.0) << contention;
  }
}

TEST(StepTimeline, TheCommScaleMultipliesTheAllReduces) {
  const StepCompute c{0.3, 0.5, 0.2};
  const StepTimeline t = simulate_step(c, {{1.0, 0.4}, {1.0, 0.2}}, Overlap{0.0, 0.5});
  EXPECT_NEAR(t.comm_s, 0.3, kTol);
  EXPECT_NEAR(t.step_s, c.total() + 0.3, kTol);
}

TEST(StepTimeline, TheWaitIsExposedWhateverTheAllReducesHide) {
  // Buckets that all finish inside backward, and the same with one exposed past it: the wait adds to both.
  const StepCompute c{0.1, 1.0, 0.1};
  for (double last_comm : {0.05, 0.4}) {
    const std::vector<BucketComm> buckets{{0.5, 0.1}, {0.8, last_comm}};
    const StepTimeline alone = simulate_step(c, buckets);
    const StepTimeline waiting = simulate_step(c, buckets, Overlap{0, 1, 0.003});
    EXPECT_NEAR(waiting.step_s, alone.step_s + 0.003, kTol) << last_comm;
    EXPECT_NEAR(waiting.exposed_comm_s, alone.exposed_comm_s + 0.003, kTol) << last_comm;
    EXPECT_EQ(waiting.comm_s, alone.comm_s);
  }
  EXPECT_NEAR(simulate_step(c, {{0.5, 0.1}}).exposed_comm_s, 0.0, kTol);  // hidden without the wait
}

TEST(StepTimeline, TheStepNeverFallsAsContentionOrCommScaleGrows) {
  const StepCompute c{0.1, 1.0, 0.05};
  const std::vector<BucketComm> buckets{{0.1, 0.05}, {0.3, 0.2}, {0.35, 0.01}, {0.8, 0.3}, {1.0, 0.1}};
  double previous = 0;
  for (double contention = 0; contention <= 4; contention += 0.05) {
    const double step = simulate_step(c, buckets, Overlap{contention, 1.0}).step_s;
    EXPECT_GE(step, previous - kTol) << contention;
    previous = step;
  }
  EXPECT_GT(previous, simulate_step(c, buckets).step_s);  // and it does grow: backward overlaps the all-reduces
  previous = 0;
  for (double scale = 0; scale <= 10; scale += 0.1) {
    const double step = simulate_step(c, buckets, Overlap{0.3, scale}).step_s;
    EXPECT_GE(step, previous - kTol) << scale;
    previous = step;
  }
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
  return StepModel{ComputeProfile(points), params, ready, allreduce, 4.0, true, {}};
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
