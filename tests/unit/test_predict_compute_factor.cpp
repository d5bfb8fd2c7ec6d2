// The multi-GPU compute factor on synthetic studies whose answers are known: it is the ratio of the
// medians of the unoverlapped phases (multi-GPU over 1 GPU at the same per-GPU batch), clamped to its
// bounds, absent where nothing witnesses it; and on synthetic timelines the calibration recovers a known
// factor and a known contention together, the factor from the phases and the contention from what
// remains of the step, and predicts a larger count as the synthetic truth does.
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
constexpr double kOneGpuUnoverlapped = kOneGpu.before_backward_s + kOneGpu.optimizer_s;  // as timed

MeasuredConfig run(int64_t gpus, int64_t batch, double step_s, double unoverlapped_s) {
  MeasuredConfig c;
  c.group = std::to_string(gpus) + "-gpus-" + std::to_string(batch);
  c.gpus = gpus;
  c.batch_size = batch;
  c.step_s = step_s;
  c.unoverlapped_s = unoverlapped_s;
  if (gpus == 1) c.phases = kOneGpu;
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

TEST(ComputeFactor, IsTheRatioOfTheMediansOfTheUnoverlappedPhases) {
  // 1 GPU: 30 and 32 ms (median 31); 2 GPUs: 33, 34.1 and 40 ms (median 34.1): 1.1.
  const StudyInputs study = weak_study({run(1, kBatch, 0.08, 0.030), run(1, kBatch, 0.08, 0.032), run(2, kBatch, 0.09, 0.033),
                                        run(2, kBatch, 0.09, 0.0341), run(2, kBatch, 0.09, 0.040)});
  const ComputeFactor f = measure_compute_factor(study, 2, kBatch);
  EXPECT_TRUE(f.measured);
  EXPECT_NEAR(f.value, 1.1, 1e-12);
  EXPECT_FALSE(f.at_bound);
}

TEST(ComputeFactor, IsClampedToItsBounds) {
  const ComputeFactor slow = measure_compute_factor(weak_study({run(1, kBatch, 0.08, 0.03), run(2, kBatch, 0.2, 0.06)}), 2, kBatch);
  EXPECT_TRUE(slow.measured);
  EXPECT_EQ(slow.value, kMaxComputeFactor);
  EXPECT_TRUE(slow.at_bound);
  const ComputeFactor fast = measure_compute_factor(weak_study({run(1, kBatch, 0.08, 0.03), run(2, kBatch, 0.05, 0.015)}), 2, kBatch);
  EXPECT_EQ(fast.value, kMinComputeFactor);
  EXPECT_TRUE(fast.at_bound);
}

TEST(ComputeFactor, UnmeasuredWithoutAWitness) {
  const double none = std::numeric_limits<double>::quiet_NaN();
  // A file without the phase columns, on either side.
  EXPECT_FALSE(measure_compute_factor(weak_study({run(1, kBatch, 0.08, none), run(2, kBatch, 0.09, 0.03)}), 2, kBatch).measured);
  EXPECT_FALSE(measure_compute_factor(weak_study({run(1, kBatch, 0.08, 0.03), run(2, kBatch, 0.09, none)}), 2, kBatch).measured);
  // No run at the count, one GPU itself, and no 1-GPU run at the per-GPU batch.
  const StudyInputs study = weak_study({run(1, kBatch, 0.08, 0.03), run(2, kBatch, 0.09, 0.033)});
  EXPECT_FALSE(measure_compute_factor(study, 4, kBatch).measured);
  EXPECT_FALSE(measure_compute_factor(study, 1, kBatch).measured);
  EXPECT_FALSE(measure_compute_factor(study, 2, 2 * kBatch).measured);
  const ComputeFactor none_measured = measure_compute_factor(study, 4, kBatch);
  EXPECT_EQ(none_measured.value, 1.0);
}

TEST(ComputeFactor, StrongScalingComparesTheSamePerGpuBatch) {
  // A global batch of 64 on 2 GPUs is 32 per GPU: the 1-GPU run at 32 is the reference, not the one at 64.
  StudyInputs study = weak_study({run(1, 32, 0.04, 0.015), run(1, 64, 0.08, 0.05), run(2, 64, 0.05, 0.018)});
  study.mode = Scaling::Strong;
  const ComputeFactor f = measure_compute_factor(study, 2, 64);
  EXPECT_TRUE(f.measured);
  EXPECT_NEAR(f.value, 1.2, 1e-12);
  EXPECT_FALSE(measure_compute_factor(study, 3, 64).measured);  // 64 / 3 is no per-GPU batch
}

StepModel overlapping_model() { return testing::overlapping_model(kBatch); }

double step_at(const StepModel& model, int64_t gpus) { return predict_point(model, gpus, Scaling::Weak, kBatch, kBucketMib)->step_s; }

StepModel truth_of(double factor, double contention) {
  StepModel model = overlapping_model();
  model.calibration.gpus = 2;
  model.calibration.parameter = OverlapParameter::Contention;
  model.calibration.overlap.contention = contention;
  model.calibration.compute = ComputeFactor{factor, true, false};
  return model;
}

// The study a synthetic truth makes: its 1-GPU compute, its 2-GPU step with the unoverlapped phases slowed
// by the truth's factor, and a 4-GPU step the check compares with.
StudyInputs study_made_by(const StepModel& truth) {
  return weak_study({run(1, kBatch, kOneGpu.total(), kOneGpuUnoverlapped),
                     run(2, kBatch, step_at(truth, 2), kOneGpuUnoverlapped * truth.calibration.compute.value),
                     run(4, kBatch, step_at(truth, 4), kOneGpuUnoverlapped * truth.calibration.compute.value)});
}

TEST(ComputeFactorCalibration, RecoversAKnownFactorAndContentionTogether) {
  const StepModel model = overlapping_model();
  for (const auto& [factor, contention] : {std::pair{1.08, 0.3}, std::pair{1.15, 0.0}, std::pair{0.95, 1.0}}) {
    const StepModel truth = truth_of(factor, contention);
    const std::vector<CheckRow> rows = leave_one_out(model, study_made_by(truth), kBatch, {2, 4});
    ASSERT_EQ(rows.size(), 2u);
    const CheckRow& four = rows[1];
    ASSERT_EQ(four.gpus, 4);
    EXPECT_EQ(four.calibration_gpus, 2);
    EXPECT_NEAR(four.compute_factor, factor, 1e-12) << factor;
    EXPECT_EQ(four.compute_factor_at_bound, 0);
    EXPECT_EQ(four.compute_factor_applied, 1);
    EXPECT_EQ(four.calibration_parameter, static_cast<int64_t>(OverlapParameter::Contention));
    EXPECT_NEAR(four.calibration_value, contention, 1e-9) << factor << " " << contention;
    EXPECT_NEAR(four.predicted_step_s, step_at(truth, 4), 1e-12);
    EXPECT_NEAR(four.predicted_error, 0.0, 1e-9);
    // 2 GPUs: nothing multi-GPU below it, so neither is measured there.
    EXPECT_EQ(rows[0].calibration_gpus, 0);
    EXPECT_TRUE(std::isnan(rows[0].compute_factor));
    EXPECT_EQ(rows[0].compute_factor_applied, 0);
    EXPECT_NEAR(rows[0].predicted_step_s, step_at(model, 2), 1e-15);
  }
}

TEST(ComputeFactorCalibration, WithoutAFactorTheContentionAloneIsRecovered) {
  // Unoverlapped phases that do not change with the count: a factor of 1, and the contention the step made.
  const StepModel truth = truth_of(1.0, 0.4);
  const OverlapCalibration c = calibration_below(overlapping_model(), study_made_by(truth), kBatch, 4);
  EXPECT_EQ(c.gpus, 2);
  EXPECT_TRUE(c.compute.measured);
  EXPECT_EQ(c.compute.value, 1.0);
  EXPECT_NEAR(c.value(), 0.4, 1e-9);
}

TEST(ComputeFactorCalibration, ThePhasesNotTheStepIdentifyTheFactor) {
  // The same measured steps with the factor's witness missing: the fit can only explain the whole excess
  // as contention, so it finds more of it than the truth had, and the 4-GPU prediction misses.
  const StepModel truth = truth_of(1.08, 0.3);
  StudyInputs blind = study_made_by(truth);
  for (MeasuredConfig& c : blind.configs) c.unoverlapped_s = std::numeric_limits<double>::quiet_NaN();
  const OverlapCalibration c = calibration_below(overlapping_model(), blind, kBatch, 4);
  EXPECT_FALSE(c.compute.measured);
  EXPECT_GT(c.value(), 0.3 + 0.1);
  StepModel calibrated = overlapping_model();
  calibrated.calibration = c;
  EXPECT_GT(std::abs(step_at(calibrated, 4) - step_at(truth, 4)), 1e-4);
}

TEST(ComputeFactorCalibration, AppliesToMultiGpuCountsOfTheCalibrationLevelOnly) {
  StepModel model = overlapping_model();
  model.allreduce.inter = RingLevel{5e-6, 1e9};
  model.allreduce.gpus_per_node = 4;
  StepModel calibrated = model;
  calibrated.calibration.gpus = 2;
  calibrated.calibration.compute = ComputeFactor{1.1, true, false};
  EXPECT_FALSE(compute_factor_applies(calibrated, 1));  // the 1-GPU point is the compute itself
  EXPECT_TRUE(compute_factor_applies(calibrated, 4));
  EXPECT_FALSE(compute_factor_applies(calibrated, 8));  // across nodes: not carried
  EXPECT_EQ(step_at(calibrated, 1), step_at(model, 1));
  EXPECT_EQ(step_at(calibrated, 8), step_at(model, 8));
  EXPECT_GT(step_at(calibrated, 4), step_at(model, 4) + 0.09 * kOneGpu.total());
  // Efficiency is against the unchanged 1-GPU point: a pure compute factor of 1.1 costs 1/1.1 of it at most.
  const ScalingPoint four = *predict_point(calibrated, 4, Scaling::Weak, kBatch, kBucketMib);
  EXPECT_LT(four.efficiency, 1 / 1.1 + 1e-12);
}

}  // namespace
}  // namespace sb::predict
