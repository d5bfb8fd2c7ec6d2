// --check: at each asked GPU count N the study measured, the prediction from the points below N only
// (the 1-GPU compute, the comm sweep and the overlap calibration at the largest measured count m with
// 2 <= m < N, never N itself) beside the measurement, with the spread of the repeats and the error of
// the naive extrapolation: the efficiency measured at the largest smaller count carried forward.
#pragma once
#include <cstdint>
#include <vector>

#include "predict/predict_file.h"
#include "predict/scaling_prediction.h"
#include "predict/study_inputs.h"

namespace sb::predict {

// Rows for the counts of `gpus` above 1 that the study measured at the study's scaling and `batch`
// (per GPU under weak scaling, global under strong); `predicted_step_s` is NaN where the model lacks
// the compute at the per-GPU batch, the naive columns where the study lacks the 1-GPU point. `model`'s
// own calibration is not used: each row fits its own.
std::vector<CheckRow> leave_one_out(const StepModel& model, const StudyInputs& study, int64_t batch, const std::vector<int64_t>& gpus);

// The calibration `predict` uses: fitted at the largest multi-GPU count the study measured at `batch`
// below `below` (the median of its repeats), at the study's scaling and bucket size; none (gpus 0) where
// there is no such count or the model lacks its compute.
OverlapCalibration calibration_below(const StepModel& model, const StudyInputs& study, int64_t batch, int64_t below);

}  // namespace sb::predict
