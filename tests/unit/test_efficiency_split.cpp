// The efficiency loss split into its causes (train/study/efficiency_split.h), with hand-made steps: the
// median rank's step, its wait for the later ranks attributed to the later rank's input, compute or
// optimizer, and parts that add up to the study's loss with what the phases do not cover left over.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "metrics/step_phases.h"
#include "train/study/efficiency_split.h"

namespace sb {
namespace {

// [rank][step] arrivals from one step pattern per rank, the same at every step.
std::vector<StepArrival> repeated(const std::vector<StepArrival>& per_rank, int steps) {
  std::vector<StepArrival> out;
  for (const StepArrival& a : per_rank)
    for (int s = 0; s < steps; ++s) out.push_back(a);
  return out;
}

// [rank][step][phase] ns with only the comm phase set, per rank.
std::vector<int64_t> comm_phases(const std::vector<double>& comm_s, int steps) {
  std::vector<int64_t> out;
  for (double c : comm_s) {
    for (int s = 0; s < steps; ++s) {
      for (int p = 0; p < kPhaseCount; ++p) out.push_back(p == kPhaseComm ? std::llround(c * 1e9) : 0);
    }
  }
  return out;
}

StepParts one_rank(double input, double compute, double optimizer, double comm) {
  const std::vector<StepArrival> a = repeated({{input + compute, input, compute, optimizer}}, 4);
  const std::vector<int64_t> phases = comm_phases({comm}, 4);
  const SampledEpoch epochs[] = {{a, phases, 4}};
  return median_rank_step(epochs, 1);
}

TEST(EfficiencySplit, OneRankHasNoSkewAndItsOwnStep) {
  const StepParts p = one_rank(0.002, 0.080, 0.010, 0.001);
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(p.steps, 4);
  EXPECT_DOUBLE_EQ(p.input_s, 0.002);
  EXPECT_DOUBLE_EQ(p.compute_s, 0.080);
  EXPECT_DOUBLE_EQ(p.optimizer_s, 0.010);
  EXPECT_NEAR(p.comm_s, 0.001, 1e-12);
  EXPECT_DOUBLE_EQ(p.skew_s, 0);
  EXPECT_NEAR(p.exposed_comm_s, 0.001, 1e-12);
}

// Three ranks: rank 2 arrives 30 ms late at every step, 25 ms of it compute and 5 ms input, and rank 0
// updates 4 ms slower. Ready times (arrival + optimizer): rank 0 92, rank 1 90, rank 2 120: the median is
// rank 0. Rank 0 spends 33 ms in the check and the stop check: 32 waiting for rank 2, 1 their own time.
TEST(EfficiencySplit, TheMedianRankWaitsForTheLateRanksOwnCauses) {
  const std::vector<StepArrival> a = repeated({{0.078, 0.003, 0.075, 0.014, 0.033},
                                               {0.080, 0.003, 0.077, 0.010, 0.035},
                                               {0.110, 0.008, 0.102, 0.010, 0.005}},
                                              5);
  const std::vector<int64_t> phases = comm_phases({0.006, 0.006, 0.002}, 5);
  const SampledEpoch epochs[] = {{a, phases, 5}};
  const StepParts p = median_rank_step(epochs, 3);
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(p.steps, 5);
  EXPECT_NEAR(p.skew_input_s, 0.005, 1e-12);     // rank 2's input over rank 0's
  EXPECT_NEAR(p.skew_compute_s, 0.027, 1e-12);   // rank 2's compute over rank 0's
  EXPECT_NEAR(p.skew_optimizer_s, 0.0, 1e-12);   // rank 0 itself has the longest update
  EXPECT_NEAR(p.skew_s, 0.032, 1e-12);           // 110 - 78 ms
  EXPECT_EQ(p.late_rank, 2);
  EXPECT_NEAR(p.comm_s, 0.006, 1e-12);
  EXPECT_NEAR(p.collectives_s, 0.033, 1e-12);
  EXPECT_NEAR(p.exposed_comm_s, 0.006 + 0.001, 1e-12);  // the all-reduce and the checks' own time
  EXPECT_DOUBLE_EQ(p.input_s, 0.003);
  EXPECT_DOUBLE_EQ(p.compute_s, 0.075);
  EXPECT_DOUBLE_EQ(p.optimizer_s, 0.014);
}

TEST(EfficiencySplit, ASlowUpdateOnAnotherRankIsTheOptimizersSkew) {
  // Rank 1 updates 20 ms slower; the arrivals are even. Ready: rank 0 90, rank 1 110: the median is rank 0.
  const std::vector<StepArrival> a = repeated({{0.080, 0.002, 0.078, 0.010}, {0.080, 0.002, 0.078, 0.030}}, 3);
  const std::vector<int64_t> phases = comm_phases({0.001, 0.001}, 3);
  const SampledEpoch epochs[] = {{a, phases, 3}};
  const StepParts p = median_rank_step(epochs, 2);
  EXPECT_EQ(p.rank, 0);
  EXPECT_NEAR(p.skew_optimizer_s, 0.020, 1e-12);
  EXPECT_EQ(p.late_rank, -1);  // even arrivals: no rank arrived after the median rank
  EXPECT_NEAR(p.skew_compute_s, 0.0, 1e-12);
  EXPECT_NEAR(p.skew_input_s, 0.0, 1e-12);
}

TEST(EfficiencySplit, TheLateRankIsTakenAtEachStep) {
  // Rank 1 is late by 10 ms at the first step, rank 0 late by 6 ms at the second. The lower median of
  // the two ranks by their mean ready time (rank 0: 83, rank 1: 85 ms) is rank 0: it waits 10 ms at the
  // first step (rank 1's input) and none at the second: 5 ms a step.
  const std::vector<StepArrival> a{{0.080, 0.000, 0.080, 0.0}, {0.086, 0.000, 0.086, 0.0},  // rank 0, steps 0 and 1
                                   {0.090, 0.010, 0.080, 0.0}, {0.080, 0.000, 0.080, 0.0}};  // rank 1
  const SampledEpoch epochs[] = {{a, {}, 0}};
  const StepParts p = median_rank_step(epochs, 2);
  EXPECT_EQ(p.rank, 0);
  EXPECT_NEAR(p.skew_input_s, 0.005, 1e-12);
  EXPECT_NEAR(p.skew_compute_s, 0.0, 1e-12);
  EXPECT_TRUE(std::isnan(p.comm_s));  // no /steps samples
}

TEST(EfficiencySplit, EpochsPoolTheirSteps) {
  const std::vector<StepArrival> first = repeated({{0.050, 0.0, 0.050, 0.0}}, 2);
  const std::vector<StepArrival> second = repeated({{0.080, 0.0, 0.080, 0.0}}, 6);
  const SampledEpoch epochs[] = {{first, {}, 0}, {second, {}, 0}};
  const StepParts p = median_rank_step(epochs, 1);
  EXPECT_EQ(p.steps, 8);
  EXPECT_NEAR(p.compute_s, (2 * 0.050 + 6 * 0.080) / 8, 1e-12);
}

TEST(EfficiencySplit, WithoutArrivalsTheSkewStaysInsideComm) {
  std::vector<int64_t> phases(2 * kPhaseCount, 0);  // one rank, two steps
  for (int s = 0; s < 2; ++s) {
    phases[static_cast<size_t>(s * kPhaseCount + kPhaseData)] = 1'000'000;
    phases[static_cast<size_t>(s * kPhaseCount + kPhaseForward)] = 20'000'000;
    phases[static_cast<size_t>(s * kPhaseCount + kPhaseBackward)] = 30'000'000;
    phases[static_cast<size_t>(s * kPhaseCount + kPhaseBackwardOverlap)] = 10'000'000;
    phases[static_cast<size_t>(s * kPhaseCount + kPhaseComm)] = 5'000'000;
    phases[static_cast<size_t>(s * kPhaseCount + kPhaseOptimizer)] = 2'000'000;
  }
  const SampledEpoch epochs[] = {{{}, phases, 2}};
  const StepParts p = median_rank_step(epochs, 1);
  EXPECT_EQ(p.rank, 0);
  EXPECT_NEAR(p.input_s, 0.001, 1e-12);
  EXPECT_NEAR(p.compute_s, 0.060, 1e-12);
  EXPECT_NEAR(p.optimizer_s, 0.002, 1e-12);
  EXPECT_NEAR(p.comm_s, 0.005, 1e-12);
  EXPECT_NEAR(p.exposed_comm_s, 0.005, 1e-12);
  EXPECT_TRUE(std::isnan(p.skew_s));
  const EfficiencySplit s = split_efficiency(0.8, 0.1, 1.0, p, p);
  EXPECT_TRUE(std::isnan(s.skew));
  EXPECT_NEAR(s.unexplained, 0.2, 1e-12);  // the same step as the baseline's: nothing else explains it
}

TEST(EfficiencySplit, NothingSampledGivesNoParts) {
  const StepParts p = median_rank_step({}, 2);
  EXPECT_EQ(p.rank, -1);
  const EfficiencySplit s = split_efficiency(0.9, 0.1, 1.0, p, p);
  EXPECT_DOUBLE_EQ(s.efficiency_loss, 0.1);
  EXPECT_TRUE(std::isnan(s.unexplained));
}

// Weak scaling: a 100 ms baseline step (80 compute, 2 input, 10 optimizer, 1 comm, 7 outside the phases)
// against a 125 ms step at 4 ranks, efficiency 100/125.
TEST(EfficiencySplit, WeakScalingPartsAddUpToTheLoss) {
  StepParts base;
  base.rank = 0;
  base.input_s = 0.002, base.compute_s = 0.080, base.optimizer_s = 0.010, base.exposed_comm_s = 0.001;
  base.skew_s = base.skew_input_s = base.skew_compute_s = base.skew_optimizer_s = 0;
  StepParts four = base;
  four.rank = 1;
  four.steps = 64;
  four.input_s = 0.003, four.compute_s = 0.086, four.exposed_comm_s = 0.006;
  four.skew_input_s = 0.001, four.skew_compute_s = 0.012, four.skew_optimizer_s = 0.002;
  four.skew_s = 0.015;
  const EfficiencySplit s = split_efficiency(0.8, 0.125, 1.0, four, base);
  EXPECT_DOUBLE_EQ(s.efficiency_loss, 1 - 0.8);
  EXPECT_DOUBLE_EQ(s.ideal_step_s, 0.1);
  EXPECT_NEAR(s.exposed_comm, 0.005 / 0.125, 1e-12);
  EXPECT_NEAR(s.skew, 0.015 / 0.125, 1e-12);
  EXPECT_NEAR(s.skew_compute, 0.012 / 0.125, 1e-12);
  EXPECT_NEAR(s.skew_input, 0.001 / 0.125, 1e-12);
  EXPECT_NEAR(s.skew_optimizer, 0.002 / 0.125, 1e-12);
  EXPECT_NEAR(s.input, 0.001 / 0.125, 1e-12);
  EXPECT_NEAR(s.compute, 0.006 / 0.125, 1e-12);
  // 125 - 100 = 25 ms: 5 comm, 15 skew, 1 input, 6 compute, and -2 outside the phases (7 ms at the
  // baseline, 5 here).
  EXPECT_NEAR(s.unexplained, -0.002 / 0.125, 1e-12);
  EXPECT_NEAR(s.exposed_comm + s.skew + s.input + s.compute + s.unexplained, s.efficiency_loss, 1e-15);
  EXPECT_EQ(s.median_rank, 1);
  EXPECT_EQ(s.steps, 64);
}

// Strong scaling on 4 ranks: each rank's step has a quarter of the images, so the ideal is a quarter of
// the baseline's step; an optimizer that does not shrink is lost per-GPU compute.
TEST(EfficiencySplit, StrongScalingComparesWithTheBaselinesScaledStep) {
  StepParts base;
  base.rank = 0;
  base.input_s = 0.004, base.compute_s = 0.080, base.optimizer_s = 0.008, base.exposed_comm_s = 0;
  base.skew_s = base.skew_input_s = base.skew_compute_s = base.skew_optimizer_s = 0;
  StepParts four = base;
  four.input_s = 0.001, four.compute_s = 0.020, four.optimizer_s = 0.008, four.exposed_comm_s = 0.002;
  // The baseline's step is 92 ms, the ideal at 4 ranks 23 ms; measured 31 ms.
  const double step = 0.031, efficiency = 0.023 / 0.031;
  const EfficiencySplit s = split_efficiency(efficiency, step, 0.25, four, base);
  EXPECT_NEAR(s.ideal_step_s, 0.023, 1e-15);
  EXPECT_NEAR(s.compute, 0.006 / step, 1e-12);  // the optimizer's 8 ms against an ideal 2
  EXPECT_NEAR(s.input, 0.0, 1e-12);
  EXPECT_NEAR(s.exposed_comm, 0.002 / step, 1e-12);
  EXPECT_NEAR(s.unexplained, 0.0, 1e-12);
}

TEST(EfficiencySplit, TheBaselineLosesNothing) {
  const StepParts p = one_rank(0.002, 0.080, 0.010, 0.001);
  const EfficiencySplit s = split_efficiency(1.0, 0.095, 1.0, p, p);
  EXPECT_EQ(s.efficiency_loss, 0.0);
  EXPECT_EQ(s.exposed_comm, 0.0);
  EXPECT_EQ(s.skew, 0.0);
  EXPECT_EQ(s.input, 0.0);
  EXPECT_EQ(s.compute, 0.0);
  EXPECT_EQ(s.unexplained, 0.0);
}

}  // namespace
}  // namespace sb
