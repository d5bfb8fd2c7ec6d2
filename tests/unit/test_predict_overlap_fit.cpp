// The overlap calibration on synthetic models whose answers are known: the fit recovers the contention
// or the all-reduce factor a synthetic measured step was made with, says when the measured step is out of
// its reach, is not carried to counts that span nodes when fitted within one, and the leave-one-out check
// calibrates each count only on the counts below it.
#include <gtest/gtest.h>

#include <cmath>

#include "predict/leave_one_out.h"
#include "predict/overlap_fit.h"
#include "predict/scaling_prediction.h"
#include "predict_synthetic_model.h"

namespace sb::predict {
namespace {

constexpr int64_t kBatch = 64;
constexpr double kBucketMib = 0.002;  // 524 fp32 elements: several buckets of the 4000 gradients

StepModel overlapping_model() { return testing::overlapping_model(kBatch); }

double step_at(const StepModel& model, int64_t gpus) {
  return predict_point(model, gpus, Scaling::Weak, kBatch, kBucketMib)->step_s;
}

StepModel with_overlap(StepModel model, int64_t gpus, OverlapParameter parameter, Overlap overlap) {
  model.calibration = OverlapCalibration{gpus, parameter, overlap, false, ComputeFactor{}};
  return model;
}

TEST(OverlapFit, RecoversAKnownContention) {
  const StepModel model = overlapping_model();
  for (double contention : {0.0, 0.05, 0.3, 2.0}) {
    const double measured = step_at(with_overlap(model, 4, OverlapParameter::Contention, {contention, 1.0}), 4);
    const std::optional<OverlapCalibration> fit = fit_overlap(model, 4, Scaling::Weak, kBatch, kBucketMib, measured);
    ASSERT_TRUE(fit);
    EXPECT_EQ(fit->gpus, 4);
    EXPECT_EQ(fit->parameter, OverlapParameter::Contention);
    EXPECT_NEAR(fit->value(), contention, 1e-9) << contention;
    EXPECT_FALSE(fit->at_bound);
    EXPECT_NEAR(step_at(with_overlap(model, 4, fit->parameter, fit->overlap), 4), measured, 1e-12);
  }
}

TEST(OverlapFit, AMeasuredStepFasterThanTheModelScalesTheAllReduces) {
  // Even without contention the sweep's all-reduce times give a slower step than measured: the training's
  // all-reduces are faster than the sweep's, by the factor the fit finds.
  const StepModel model = overlapping_model();
  const double measured = step_at(with_overlap(model, 4, OverlapParameter::CommScale, {0.0, 0.6}), 4);
  ASSERT_LT(measured, step_at(model, 4));
  const std::optional<OverlapCalibration> fit = fit_overlap(model, 4, Scaling::Weak, kBatch, kBucketMib, measured);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->parameter, OverlapParameter::CommScale);
  EXPECT_NEAR(fit->value(), 0.6, 1e-9);
  EXPECT_EQ(fit->overlap.contention, 0.0);
  EXPECT_FALSE(fit->at_bound);
}

TEST(OverlapFit, SaysWhenTheMeasuredStepIsOutOfReach) {
  const StepModel model = overlapping_model();
  const std::optional<OverlapCalibration> slow = fit_overlap(model, 4, Scaling::Weak, kBatch, kBucketMib, 10.0);
  ASSERT_TRUE(slow);
  EXPECT_EQ(slow->parameter, OverlapParameter::Contention);
  EXPECT_EQ(slow->value(), kMaxContention);
  EXPECT_TRUE(slow->at_bound);
  // Faster than the compute alone: not even free all-reduces reach it.
  const std::optional<OverlapCalibration> fast = fit_overlap(model, 4, Scaling::Weak, kBatch, kBucketMib, 0.05);
  ASSERT_TRUE(fast);
  EXPECT_EQ(fast->parameter, OverlapParameter::CommScale);
  EXPECT_EQ(fast->value(), 0.0);
  EXPECT_TRUE(fast->at_bound);
}

TEST(OverlapFit, WithoutOverlapTheAllReduceFactorIsFittedEvenAboveOne) {
  // The CPU engine's one all-reduce after backward: contention has nothing to act on.
  StepModel model = overlapping_model();
  model.buckets_overlap_backward = false;
  const double measured = step_at(with_overlap(model, 2, OverlapParameter::CommScale, {0.0, 1.7}), 2);
  const std::optional<OverlapCalibration> fit = fit_overlap(model, 2, Scaling::Weak, kBatch, kBucketMib, measured);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->parameter, OverlapParameter::CommScale);
  EXPECT_NEAR(fit->value(), 1.7, 1e-9);
}

TEST(OverlapFit, NoFitWhereTheComputeIsUnknown) {
  // Strong scaling of 64 on 2 GPUs needs the 1-GPU compute at batch 32, which was not measured.
  EXPECT_FALSE(fit_overlap(overlapping_model(), 2, Scaling::Strong, kBatch, kBucketMib, 0.1));
}

TEST(OverlapCalibrationLevels, AWithinNodeCalibrationIsNotCarriedAcrossNodes) {
  StepModel model = overlapping_model();
  model.allreduce.inter = RingLevel{5e-6, 1e9};
  model.allreduce.gpus_per_node = 4;
  const StepModel calibrated = with_overlap(model, 4, OverlapParameter::Contention, {0.5, 1.0});
  EXPECT_TRUE(calibration_applies(calibrated, 2));
  EXPECT_TRUE(calibration_applies(calibrated, 4));
  EXPECT_FALSE(calibration_applies(calibrated, 8));
  EXPECT_GT(step_at(calibrated, 4), step_at(model, 4));
  EXPECT_EQ(step_at(calibrated, 8), step_at(model, 8));
  EXPECT_FALSE(calibration_applies(model, 4));  // no calibration at all
}

TEST(OverlapCalibrationLevels, TheAllReduceFactorStaysWithItsSourceOfTimes) {
  // The sweep measured 4 ranks: 4 GPUs take its curve, 2 and 8 the fitted ring. A factor fitted at 2
  // corrects the ring there, so it is carried to 8 but not to 4; a contention is carried everywhere.
  StepModel model = overlapping_model();
  model.allreduce.intra_measured = MeasuredCurve{4, {{100, 1e-4}, {1e6, 1e-2}}};
  ASSERT_TRUE(model.allreduce.uses_measured_curve(4));
  ASSERT_FALSE(model.allreduce.uses_measured_curve(2));
  const StepModel factor = with_overlap(model, 2, OverlapParameter::CommScale, {0.0, 0.5});
  EXPECT_TRUE(calibration_applies(factor, 8));
  EXPECT_FALSE(calibration_applies(factor, 4));
  EXPECT_EQ(step_at(factor, 4), step_at(model, 4));
  EXPECT_LT(step_at(factor, 8), step_at(model, 8));
  const StepModel contention = with_overlap(model, 2, OverlapParameter::Contention, {0.5, 1.0});
  EXPECT_TRUE(calibration_applies(contention, 4));
  EXPECT_TRUE(calibration_applies(contention, 8));
}

// A weak study at kBatch: the 1-GPU point and the given multi-GPU steps, one repeat each.
StudyInputs study_of(const std::vector<std::pair<int64_t, double>>& steps) {
  StudyInputs s;
  s.mode = Scaling::Weak;
  s.bucket_mib = kBucketMib;
  s.run_batch_size = kBatch;
  s.configs.push_back(MeasuredConfig{"one", 1, 1, kBatch, 0.08, testing::kSyntheticCompute, 0});
  for (const auto& [gpus, step] : steps) s.configs.push_back(MeasuredConfig{std::to_string(gpus) + "-gpus", gpus, 1, kBatch, step, {}, 0});
  return s;
}

const CheckRow& row_at(const std::vector<CheckRow>& rows, int64_t gpus) {
  for (const CheckRow& r : rows)
    if (r.gpus == gpus) return r;
  throw std::out_of_range("no check row at " + std::to_string(gpus) + " GPUs");
}

TEST(LeaveOneOut, EachCountIsCalibratedOnlyOnTheCountsBelowIt) {
  const StepModel model = overlapping_model();
  const double contention = 0.4;
  const StepModel truth = with_overlap(model, 2, OverlapParameter::Contention, {contention, 1.0});
  const std::vector<int64_t> counts{2, 4, 8};
  const std::vector<CheckRow> rows = leave_one_out(model, study_of({{2, step_at(truth, 2)}, {4, 0.3}, {8, 0.5}}), kBatch, counts);
  ASSERT_EQ(rows.size(), 3u);

  const CheckRow& two = row_at(rows, 2);  // nothing measured below: the uncalibrated model
  EXPECT_EQ(two.calibration_gpus, 0);
  EXPECT_EQ(two.calibration_parameter, static_cast<int64_t>(OverlapParameter::None));
  EXPECT_NEAR(two.predicted_step_s, step_at(model, 2), 1e-15);

  const CheckRow& four = row_at(rows, 4);  // calibrated at 2, which the synthetic truth made
  EXPECT_EQ(four.calibration_gpus, 2);
  EXPECT_EQ(four.calibration_parameter, static_cast<int64_t>(OverlapParameter::Contention));
  EXPECT_NEAR(four.calibration_value, contention, 1e-9);
  EXPECT_EQ(four.calibration_applied, 1);
  EXPECT_NEAR(four.predicted_step_s, step_at(truth, 4), 1e-12);
  EXPECT_NEAR(four.predicted_error, (four.predicted_step_s - 0.3) / 0.3, 1e-12);

  EXPECT_EQ(row_at(rows, 8).calibration_gpus, 4);  // the largest count below 8, not 2

  // The target's own measurement never reaches its prediction: change it, and only the comparison moves.
  const std::vector<CheckRow> changed = leave_one_out(model, study_of({{2, step_at(truth, 2)}, {4, 3.0}, {8, 0.5}}), kBatch, {4});
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].predicted_step_s, four.predicted_step_s);
  EXPECT_EQ(changed[0].calibration_value, four.calibration_value);
  EXPECT_EQ(changed[0].measured_step_s, 3.0);
  // Nor does a larger count's: 4 is predicted the same without 8 in the study.
  const std::vector<CheckRow> without_eight = leave_one_out(model, study_of({{2, step_at(truth, 2)}, {4, 0.3}}), kBatch, {4});
  EXPECT_EQ(without_eight.at(0).predicted_step_s, four.predicted_step_s);
}

TEST(LeaveOneOut, PredictCalibratesAtTheLargestMeasuredCount) {
  const StepModel model = overlapping_model();
  const StepModel truth = with_overlap(model, 8, OverlapParameter::Contention, {0.25, 1.0});
  const StudyInputs study = study_of({{2, 0.2}, {8, step_at(truth, 8)}});
  const OverlapCalibration c = calibration_below(model, study, kBatch, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(c.gpus, 8);
  EXPECT_NEAR(c.value(), 0.25, 1e-9);
  EXPECT_EQ(calibration_below(model, study_of({}), kBatch, std::numeric_limits<int64_t>::max()).gpus, 0);
}

}  // namespace
}  // namespace sb::predict
