// The multi-GPU compute factors on synthetic studies whose answers are known: each is the median of its
// part of the step (outside backward, and backward) over a count's repeats, over the same part of the
// 1-GPU run the model takes, clamped to its bounds, absent where nothing witnesses it. On synthetic
// timelines the calibration recovers a known pair of factors and a known wait after backward, and
// predicts a larger count as the synthetic truth does: a backward slowed by a fixed factor beside any
// all-reduce is carried unchanged although the overlapped all-reduce time grows with the count.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "predict/compute_factor.h"
#include "predict/leave_one_out.h"
#include "predict/overlap_fit.h"
#include "predict/scaling_prediction.h"
#include "predict_synthetic_model.h"

namespace sb::predict {
namespace {

constexpr int64_t kBatch = 64;
constexpr double kBucketMib = 0.002;  // 524 fp32 elements: several buckets of the 4000 gradients
constexpr StepCompute kOneGpu = testing::kSyntheticCompute;

// A run whose phases split as `outside` (before backward and the optimizer, half each) and `backward`.
MeasuredConfig run(int64_t gpus, int64_t batch, double step_s, double outside, double backward) {
  MeasuredConfig c;
  c.group = std::to_string(gpus) + "-gpus-" + std::to_string(batch) + "-" + std::to_string(step_s);
  c.gpus = gpus;
  c.batch_size = batch;
  c.step_s = step_s;
  c.phases = StepCompute{outside / 2, backward, outside / 2};
  c.exposed_comm_s = step_s - c.phases.total();
  c.phases_measured = true;
  return c;
}

StudyInputs weak_study(std::vector<MeasuredConfig> configs) {
  StudyInputs s;
  s.mode = Scaling::Weak;
  s.bucket_mib = kBucketMib;
  s.run_batch_size = kBatch;
  s.configs = std::move(configs);
  return s;
}

TEST(ComputeFactor, IsTheRatioOfTheMediansOverTheOneGpuRunTheModelTakes) {
  // 1 GPU: the runs of 90 and 100 ms; the model takes the lower median (90 ms: outside 31, backward 50 ms).
  // 2 GPUs: outside 33, 34.1 and 40 ms (median 34.1: 1.1), backward 60, 60 and 54 ms (median 60: 1.2).
  const StudyInputs study = weak_study({run(1, kBatch, 0.10, 0.033, 0.06), run(1, kBatch, 0.09, 0.031, 0.05),
                                        run(2, kBatch, 0.1, 0.033, 0.06), run(2, kBatch, 0.1, 0.0341, 0.06),
                                        run(2, kBatch, 0.1, 0.040, 0.054)});
  ASSERT_EQ(one_gpu_run(study, kBatch)->step_s, 0.09);
  const ComputeFactor f = measure_compute_factor(study, 2, kBatch);
  EXPECT_TRUE(f.measured);
  EXPECT_NEAR(f.value, 1.1, 1e-12);
  EXPECT_NEAR(f.backward, 1.2, 1e-12);
  EXPECT_FALSE(f.at_bound);
  EXPECT_FALSE(f.backward_at_bound);
}

TEST(ComputeFactor, IsClampedToItsBounds) {
  const ComputeFactor slow =
      measure_compute_factor(weak_study({run(1, kBatch, 0.08, 0.03, 0.05), run(2, kBatch, 0.5, 0.06, 0.3)}), 2, kBatch);
  EXPECT_TRUE(slow.measured);
  EXPECT_EQ(slow.value, kMaxComputeFactor);
  EXPECT_TRUE(slow.at_bound);
  EXPECT_EQ(slow.backward, kMaxBackwardFactor);
  EXPECT_TRUE(slow.backward_at_bound);
  const ComputeFactor fast =
      measure_compute_factor(weak_study({run(1, kBatch, 0.08, 0.03, 0.05), run(2, kBatch, 0.05, 0.015, 0.03)}), 2, kBatch);
  EXPECT_EQ(fast.value, kMinComputeFactor);
  EXPECT_TRUE(fast.at_bound);
  EXPECT_EQ(fast.backward, kMinComputeFactor);
  EXPECT_TRUE(fast.backward_at_bound);
  // Backward twice as long beside the all-reduces is within its bound (contention), not clamped.
  const ComputeFactor contended =
      measure_compute_factor(weak_study({run(1, kBatch, 0.08, 0.03, 0.05), run(2, kBatch, 0.13, 0.03, 0.1)}), 2, kBatch);
  EXPECT_NEAR(contended.backward, 2.0, 1e-12);
  EXPECT_FALSE(contended.backward_at_bound);
}

TEST(ComputeFactor, UnmeasuredWithoutAWitness) {
  // A file without the phase columns, on either side.
  MeasuredConfig blind_one = run(1, kBatch, 0.08, 0.03, 0.05), blind_two = run(2, kBatch, 0.09, 0.033, 0.055);
  blind_one.phases_measured = blind_two.phases_measured = false;
  EXPECT_FALSE(measure_compute_factor(weak_study({blind_one, run(2, kBatch, 0.09, 0.033, 0.055)}), 2, kBatch).measured);
  EXPECT_FALSE(measure_compute_factor(weak_study({run(1, kBatch, 0.08, 0.03, 0.05), blind_two}), 2, kBatch).measured);
  // No run at the count, one GPU itself, and no 1-GPU run at the per-GPU batch.
  const StudyInputs study = weak_study({run(1, kBatch, 0.08, 0.03, 0.05), run(2, kBatch, 0.09, 0.033, 0.055)});
  EXPECT_FALSE(measure_compute_factor(study, 4, kBatch).measured);
  EXPECT_FALSE(measure_compute_factor(study, 1, kBatch).measured);
  EXPECT_FALSE(measure_compute_factor(study, 2, 2 * kBatch).measured);
  const ComputeFactor none_measured = measure_compute_factor(study, 4, kBatch);
  EXPECT_EQ(none_measured.value, 1.0);
  EXPECT_EQ(none_measured.backward, 1.0);
}

TEST(ComputeFactor, StrongScalingComparesTheSamePerGpuBatch) {
  // A global batch of 64 on 2 GPUs is 32 per GPU: the 1-GPU run at 32 is the reference, not the one at 64.
  StudyInputs study = weak_study({run(1, 32, 0.04, 0.015, 0.025), run(1, 64, 0.08, 0.05, 0.05), run(2, 64, 0.05, 0.018, 0.0275)});
  study.mode = Scaling::Strong;
  const ComputeFactor f = measure_compute_factor(study, 2, 64);
  EXPECT_TRUE(f.measured);
  EXPECT_NEAR(f.value, 1.2, 1e-12);
  EXPECT_NEAR(f.backward, 1.1, 1e-12);
  EXPECT_FALSE(measure_compute_factor(study, 3, 64).measured);  // 64 / 3 is no per-GPU batch
}

StepModel overlapping_model() { return testing::overlapping_model(kBatch); }

double step_at(const StepModel& model, int64_t gpus) { return predict_point(model, gpus, Scaling::Weak, kBatch, kBucketMib)->step_s; }

// A synthetic truth: at every multi-GPU count the compute outside backward is `outside` times the 1-GPU
// one, backward `backward` times (whatever the all-reduces beside it), and the step waits `wait_s` after
// backward; with `comm_scale`, the training's all-reduces take that times the model's.
StepModel truth_of(double outside, double backward, double wait_s, double comm_scale = 1) {
  StepModel model = overlapping_model();
  model.calibration.gpus = 2;
  model.calibration.parameter = comm_scale == 1 ? OverlapParameter::Wait : OverlapParameter::CommScale;
  model.calibration.overlap = Overlap{0, comm_scale, wait_s};
  model.calibration.compute = ComputeFactor{outside, backward, true, false, false};
  return model;
}

// What a study records of the truth at `gpus`: its step, and its phases as the reader splits them.
MeasuredConfig measured_run(const StepModel& truth, int64_t gpus) {
  const StepCompute phases = gpus == 1 ? kOneGpu : kOneGpu.scaled(truth.calibration.compute.value, truth.calibration.compute.backward);
  return run(gpus, kBatch, step_at(truth, gpus), phases.before_backward_s + phases.optimizer_s, phases.backward_s);
}

StudyInputs study_made_by(const StepModel& truth) {
  return weak_study({measured_run(truth, 1), measured_run(truth, 2), measured_run(truth, 4)});
}

TEST(ComputeFactorCalibration, ABackwardSlowedByAFixedFactorIsRecoveredAndCarried) {
  const StepModel model = overlapping_model();
  // The all-reduces beside backward last three times as long at 4 GPUs as at 2: a backward slowdown fitted
  // per second of overlap would triple there, the measured factor does not.
  ASSERT_GT(predict_point(model, 4, Scaling::Weak, kBatch, kBucketMib)->comm_s,
            2.5 * predict_point(model, 2, Scaling::Weak, kBatch, kBucketMib)->comm_s);
  for (const auto& [outside, backward, wait] : {std::tuple{1.08, 1.15, 0.002}, std::tuple{1.0, 1.3, 0.0}, std::tuple{0.95, 1.0, 5e-4}}) {
    const StepModel truth = truth_of(outside, backward, wait);
    const std::vector<CheckRow> rows = leave_one_out(model, study_made_by(truth), kBatch, {2, 4});
    ASSERT_EQ(rows.size(), 2u);
    const CheckRow& four = rows[1];
    ASSERT_EQ(four.gpus, 4);
    EXPECT_EQ(four.calibration_gpus, 2);
    EXPECT_NEAR(four.compute_factor, outside, 1e-12) << outside;
    EXPECT_NEAR(four.backward_factor, backward, 1e-12) << backward;
    EXPECT_EQ(four.compute_factor_at_bound, 0);
    EXPECT_EQ(four.backward_factor_at_bound, 0);
    EXPECT_EQ(four.compute_factor_applied, 1);
    EXPECT_EQ(four.calibration_parameter, static_cast<int64_t>(OverlapParameter::Wait));
    EXPECT_NEAR(four.calibration_value, wait, 1e-12) << wait;
    EXPECT_EQ(four.calibration_applied, 1);
    EXPECT_NEAR(four.predicted_step_s, step_at(truth, 4), 1e-12);
    EXPECT_NEAR(four.predicted_error, 0.0, 1e-9);
    // 2 GPUs: nothing multi-GPU below it, so neither is measured there.
    EXPECT_EQ(rows[0].calibration_gpus, 0);
    EXPECT_TRUE(std::isnan(rows[0].compute_factor));
    EXPECT_TRUE(std::isnan(rows[0].backward_factor));
    EXPECT_EQ(rows[0].compute_factor_applied, 0);
    EXPECT_NEAR(rows[0].predicted_step_s, step_at(model, 2), 1e-15);
  }
}

TEST(ComputeFactorCalibration, TheRanksSpreadAtTheCalibrationCountIsCarried) {
  // A truth whose ranks spread by 2% of the compute: its step at 4 GPUs waits longer for the slowest rank
  // than at 2. The study's three 2-GPU repeats measured 1%, 2% and 4% (median 2%).
  StepModel truth = truth_of(1.03, 1.06, 3e-4);
  truth.calibration.rank_spread = 0.02;
  StudyInputs study = weak_study({measured_run(truth, 1), measured_run(truth, 2), measured_run(truth, 2), measured_run(truth, 2),
                                  measured_run(truth, 4)});
  study.configs[1].rank_spread = 0.01;
  study.configs[2].rank_spread = 0.04;
  study.configs[3].rank_spread = 0.02;
  study.configs[4].rank_spread = 0.5;  // the target's own, which the check must not use
  const std::vector<CheckRow> rows = leave_one_out(overlapping_model(), study, kBatch, {2, 4});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].rank_spread, 0.0);  // nothing multi-GPU below 2
  EXPECT_NEAR(rows[1].rank_spread, 0.02, 1e-15);
  EXPECT_NEAR(rows[1].calibration_value, 3e-4, 1e-12);  // the wait at 2 GPUs holds their own slowest rank
  EXPECT_NEAR(rows[1].predicted_step_s, step_at(truth, 4), 1e-12);
  // Without the sampled steps the same study predicts 4 GPUs short by the added lateness.
  for (MeasuredConfig& c : study.configs) c.rank_spread.reset();
  const CheckRow blind = leave_one_out(overlapping_model(), study, kBatch, {4})[0];
  EXPECT_EQ(blind.rank_spread, 0.0);
  EXPECT_LT(blind.predicted_step_s, step_at(truth, 4) - 1e-5);
}

TEST(ComputeFactorCalibration, AllReducesFasterThanTheSweepAreTheirFactor) {
  // The step at the calibration count is shorter than the measured compute and the model's all-reduces
  // give: the training's all-reduces ran faster, by the factor the fit finds (carried: one source of times).
  const StepModel truth = truth_of(1.05, 1.1, 0.0, 0.6);
  const StudyInputs study = study_made_by(truth);
  const OverlapCalibration c = calibration_below(overlapping_model(), study, kBatch, 4);
  EXPECT_EQ(c.gpus, 2);
  EXPECT_EQ(c.parameter, OverlapParameter::CommScale);
  EXPECT_NEAR(c.value(), 0.6, 1e-9);
  EXPECT_EQ(c.overlap.contention, 0.0);
  StepModel calibrated = overlapping_model();
  calibrated.calibration = c;
  EXPECT_NEAR(step_at(calibrated, 4), step_at(truth, 4), 1e-12);
}

TEST(ComputeFactorCalibration, ZeroCommunicationStillScalesPerfectly) {
  // Free all-reduces and multi-GPU runs whose phases and steps are the 1-GPU run's: factors of 1, no wait,
  // and every count's efficiency is 1.
  StepModel model = overlapping_model();
  model.allreduce.intra = RingLevel{0, std::numeric_limits<double>::infinity()};
  const MeasuredConfig one = run(1, kBatch, kOneGpu.total(), kOneGpu.before_backward_s + kOneGpu.optimizer_s, kOneGpu.backward_s);
  MeasuredConfig two = one;
  two.gpus = 2;
  two.group = "2-gpus";
  const StudyInputs study = weak_study({one, two});
  model.calibration = calibration_below(model, study, kBatch, std::numeric_limits<int64_t>::max());
  ASSERT_EQ(model.calibration.gpus, 2);
  EXPECT_NEAR(model.calibration.compute.value, 1.0, 1e-12);
  EXPECT_NEAR(model.calibration.compute.backward, 1.0, 1e-12);
  EXPECT_EQ(model.calibration.parameter, OverlapParameter::Wait);
  EXPECT_NEAR(model.calibration.value(), 0.0, 1e-15);
  for (int64_t gpus : {1, 2, 4, 8, 64}) {
    const ScalingPoint p = *predict_point(model, gpus, Scaling::Weak, kBatch, kBucketMib);
    EXPECT_NEAR(p.efficiency, 1.0, 1e-12) << gpus;
    EXPECT_NEAR(p.exposed_comm_fraction, 0.0, 1e-12) << gpus;
  }
}

TEST(ComputeFactorCalibration, ThePhasesNotTheStepIdentifyTheFactors) {
  // The same measured steps with the factors' witness missing: the fit can only explain the whole excess
  // as contention per second of overlap, which grows with the all-reduces, and the 4-GPU prediction misses.
  const StepModel truth = truth_of(1.0, 1.01, 0.0);
  StudyInputs blind = study_made_by(truth);
  for (MeasuredConfig& c : blind.configs) c.phases_measured = false;
  const OverlapCalibration c = calibration_below(overlapping_model(), blind, kBatch, 4);
  EXPECT_FALSE(c.compute.measured);
  EXPECT_EQ(c.parameter, OverlapParameter::Contention);
  EXPECT_FALSE(c.at_bound);
  StepModel calibrated = overlapping_model();
  calibrated.calibration = c;
  EXPECT_NEAR(step_at(calibrated, 2), step_at(truth, 2), 1e-12);
  EXPECT_GT(step_at(calibrated, 4), step_at(truth, 4) + 2e-4);
}

TEST(ComputeFactorCalibration, AppliesToMultiGpuCountsOfTheCalibrationLevelOnly) {
  StepModel model = overlapping_model();
  model.allreduce.inter = RingLevel{5e-6, 1e9};
  model.allreduce.gpus_per_node = 4;
  StepModel calibrated = truth_of(1.1, 1.2, 0.001);
  calibrated.allreduce = model.allreduce;
  EXPECT_FALSE(compute_factor_applies(calibrated, 1));  // the 1-GPU point is the compute itself
  EXPECT_FALSE(calibration_applies(calibrated, 1));     // and waits for no other rank
  EXPECT_TRUE(compute_factor_applies(calibrated, 4));
  EXPECT_TRUE(calibration_applies(calibrated, 4));
  EXPECT_FALSE(compute_factor_applies(calibrated, 8));  // across nodes: not carried
  EXPECT_FALSE(calibration_applies(calibrated, 8));
  EXPECT_EQ(step_at(calibrated, 1), step_at(model, 1));
  EXPECT_EQ(step_at(calibrated, 8), step_at(model, 8));
  EXPECT_GT(step_at(calibrated, 4), step_at(model, 4) + 0.1 * kOneGpu.total());
  // Efficiency is against the unchanged 1-GPU point: compute factors of 1.1 and more cost 1/1.1 of it at least.
  const ScalingPoint four = *predict_point(calibrated, 4, Scaling::Weak, kBatch, kBucketMib);
  EXPECT_LT(four.efficiency, 1 / 1.1 + 1e-12);
}

}  // namespace
}  // namespace sb::predict
