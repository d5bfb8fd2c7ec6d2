// The slowest rank: the expected maximum of N normal deviations against its closed forms and tabulated
// values, the ranks' spread measured from sampled steps whose answer is known (the wait for the
// all-reduces and the warm-up steps left out), and the step model that carries it: nothing added at the
// count it was measured at, E[max] grown from there at larger counts, from one GPU across nodes.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>

#include "metrics/step_phases.h"
#include "predict/rank_spread.h"
#include "predict/scaling_prediction.h"
#include "predict_synthetic_model.h"

namespace sb::predict {
namespace {

TEST(ExpectedMaxOfNormals, MatchesClosedFormsAndTables) {
  EXPECT_EQ(expected_max_of_normals(1), 0.0);
  EXPECT_NEAR(expected_max_of_normals(2), 1 / std::sqrt(std::numbers::pi), 1e-9);
  EXPECT_NEAR(expected_max_of_normals(3), 1.5 / std::sqrt(std::numbers::pi), 1e-9);
  // Tabulated expected normal order statistics.
  EXPECT_NEAR(expected_max_of_normals(4), 1.0293753730, 1e-8);
  EXPECT_NEAR(expected_max_of_normals(5), 1.1629644736, 1e-8);
  EXPECT_NEAR(expected_max_of_normals(10), 1.5387527308, 1e-8);
  EXPECT_NEAR(expected_max_of_normals(100), 2.5075936364, 1e-8);
  EXPECT_NEAR(expected_max_of_normals(1024), 3.2482396014, 1e-8);
  double previous = 0;
  for (int64_t n = 2; n <= (1 << 20); n *= 2) {
    const double e = expected_max_of_normals(n);
    EXPECT_GT(e, previous) << n;
    EXPECT_LT(e, std::sqrt(2 * std::log(static_cast<double>(n)))) << n;  // the bound it approaches
    previous = e;
  }
  EXPECT_THROW(expected_max_of_normals(0), std::invalid_argument);
}

TEST(ExpectedMaxOfNormals, AgreesWithSampledMaxima) {
  std::mt19937_64 random(std::random_device{}());
  std::normal_distribution<double> normal;
  for (int64_t n : {2, 7, 64}) {
    constexpr int kDraws = 20000;
    double sum = 0;
    for (int d = 0; d < kDraws; ++d) {
      double largest = -INFINITY;
      for (int64_t i = 0; i < n; ++i) largest = std::max(largest, normal(random));
      sum += largest;
    }
    // The maximum's standard deviation is below 1, so the mean of 20,000 is within 0.03 of E[max] at 4 sigma.
    EXPECT_NEAR(sum / kDraws, expected_max_of_normals(n), 0.03) << n;
  }
}

// Sampled steps of `ranks` ranks: compute_ms[rank][step] split over the phases but `comm`, which gets
// `comm_ms` (the wait, which the spread leaves out).
StepSamples samples_of(const std::vector<std::vector<double>>& compute_ms, double comm_ms) {
  StepSamples s;
  s.ranks = static_cast<int64_t>(compute_ms.size());
  const size_t steps = compute_ms[0].size();
  for (size_t i = 0; i < steps; ++i) s.step_numbers.push_back(static_cast<int64_t>(i));
  s.phases.assign(kStepPhases.begin(), kStepPhases.end());
  for (const std::vector<double>& rank : compute_ms) {
    for (double ms : rank) {
      const auto ns = static_cast<int64_t>(ms * 1e6);
      for (int p = 0; p < kPhaseCount; ++p) {
        if (p == kPhaseComm) s.phase_ns.push_back(static_cast<int64_t>(comm_ms * 1e6));
        else if (p == kPhaseBackward) s.phase_ns.push_back(ns - ns / 2);
        else if (p == kPhaseForward) s.phase_ns.push_back(ns / 2);
        else s.phase_ns.push_back(0);
      }
    }
  }
  return s;
}

TEST(RankSpread, IsTheRanksDeviationFromEachStepsMean) {
  // Two ranks 0.1 ms either side of each step's mean (10, 12 and 8 ms): a deviation of 0.1 ms about a
  // mean of two, which with the ranks - 1 correction is sqrt(2) x 0.1 ms, over the mean compute of 10 ms.
  const StepSamples s = samples_of({{9.9, 12.1, 7.9}, {10.1, 11.9, 8.1}}, 3.0);
  const std::optional<double> spread = rank_spread_of(s);
  ASSERT_TRUE(spread);
  EXPECT_NEAR(*spread, std::sqrt(2.0) * 0.1 / 10, 1e-9);
  // The wait for the all-reduces does not count: the same with another comm phase.
  EXPECT_NEAR(*rank_spread_of(samples_of({{9.9, 12.1, 7.9}, {10.1, 11.9, 8.1}}, 0.5)), *spread, 1e-12);
  // Ranks that move together from step to step do not spread.
  EXPECT_NEAR(*rank_spread_of(samples_of({{9, 14, 7}, {9, 14, 7}}, 1.0)), 0.0, 1e-12);
}

TEST(RankSpread, LeavesOutTheStepsBeforeTheFirst) {
  // A warm-up step of very different ranks, then two steps 0.3 ms either side of 20 ms.
  const StepSamples s = samples_of({{5, 19.7, 20.3}, {30, 20.3, 19.7}}, 0.0);
  EXPECT_NEAR(*rank_spread_of(s, 1), std::sqrt(2.0) * 0.3 / 20, 1e-9);
  EXPECT_GT(*rank_spread_of(s, 0), 0.5);
  EXPECT_FALSE(rank_spread_of(s, 3));  // no step left
}

TEST(RankSpread, RecoversTheSpreadOfNormalDeviations) {
  std::mt19937_64 random(std::random_device{}());
  std::normal_distribution<double> deviation(0, 0.2);  // ms, about a 10 ms compute: 2%
  std::vector<std::vector<double>> compute(4, std::vector<double>(3000));
  for (size_t step = 0; step < 3000; ++step) {
    const double mean = 10 + 0.5 * std::sin(static_cast<double>(step));  // the steps themselves differ
    for (std::vector<double>& rank : compute) rank[step] = mean + deviation(random);
  }
  // 9,000 degrees of freedom: the estimate's relative standard error is under 1%.
  EXPECT_NEAR(*rank_spread_of(samples_of(compute, 0.1)), 0.02, 0.02 * 0.05);
}

TEST(RankSpread, NeedsTwoRanksAndTheCommPhase) {
  EXPECT_FALSE(rank_spread_of(samples_of({{10, 11}}, 1.0)));
  StepSamples without_comm = samples_of({{10, 11}, {11, 10}}, 1.0);
  without_comm.phases[kPhaseComm] = "other";
  EXPECT_FALSE(rank_spread_of(without_comm));
  EXPECT_FALSE(rank_spread_of(StepSamples{}));
}

constexpr int64_t kBatch = 64;
constexpr double kBucketMib = 0.002;

// The synthetic model, calibrated at 2 GPUs with compute factors (a wait of 0) and the ranks' `spread`.
StepModel calibrated_at_two(double spread) {
  StepModel m = testing::overlapping_model(kBatch);
  m.calibration.gpus = 2;
  m.calibration.parameter = OverlapParameter::Wait;
  m.calibration.compute = ComputeFactor{1.02, 1.05, true};
  m.calibration.rank_spread = spread;
  return m;
}

TEST(SlowestRank, AddsNothingWhereItWasMeasuredAndGrowsAsEMaxBeyond) {
  const StepModel even = calibrated_at_two(0);
  const StepModel spread = calibrated_at_two(0.02);
  const double compute = testing::kSyntheticCompute.scaled(1.02, 1.05).total();
  auto step = [&](const StepModel& m, int64_t gpus) { return predict_point(m, gpus, Scaling::Weak, kBatch, kBucketMib)->step_s; };
  EXPECT_DOUBLE_EQ(step(spread, 1), step(even, 1));  // one GPU waits for nobody
  EXPECT_DOUBLE_EQ(step(spread, 2), step(even, 2));  // the calibration count's step holds its own slowest rank
  for (int64_t gpus : {4, 8, 64, 1024}) {
    const double lateness = 0.02 * compute * (expected_max_of_normals(gpus) - expected_max_of_normals(2));
    EXPECT_NEAR(step(spread, gpus), step(even, gpus) + lateness, 1e-15) << gpus;
  }
  // The slowest rank's share: its whole lateness behind the ranks' mean, over the step.
  const ScalingPoint four = *predict_point(spread, 4, Scaling::Weak, kBatch, kBucketMib);
  EXPECT_NEAR(four.slowest_rank_fraction, 0.02 * compute * expected_max_of_normals(4) / four.step_s, 1e-15);
  EXPECT_EQ(predict_point(even, 4, Scaling::Weak, kBatch, kBucketMib)->slowest_rank_fraction, 0.0);
  EXPECT_EQ(predict_point(spread, 1, Scaling::Weak, kBatch, kBucketMib)->slowest_rank_fraction, 0.0);
  // Strong scaling: the lateness follows the smaller per-GPU compute.
  const ScalingPoint strong = *predict_point(spread, 4, Scaling::Strong, kBatch, kBucketMib);
  EXPECT_LT(strong.slowest_rank_fraction * strong.step_s, four.slowest_rank_fraction * four.step_s);
}

TEST(SlowestRank, AcrossNodesGrowsFromOneGpu) {
  // The calibration (compute factors, wait) is not carried across nodes, so nothing there holds the
  // slowest of two ranks: the lateness counts from one GPU, with the spread the cards showed.
  StepModel even = calibrated_at_two(0);
  even.allreduce.inter = RingLevel{5e-6, 1e9};
  even.allreduce.gpus_per_node = 4;
  StepModel spread = even;
  spread.calibration.rank_spread = 0.03;
  const double compute = testing::kSyntheticCompute.total();  // no factors across nodes
  const double eight_even = predict_point(even, 8, Scaling::Weak, kBatch, kBucketMib)->step_s;
  const double eight = predict_point(spread, 8, Scaling::Weak, kBatch, kBucketMib)->step_s;
  EXPECT_NEAR(eight, eight_even + 0.03 * compute * expected_max_of_normals(8), 1e-15);
}

}  // namespace
}  // namespace sb::predict
