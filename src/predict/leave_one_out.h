// --check: at each asked GPU count the study measured, the prediction (which uses only the 1-GPU
// compute and the comm sweep, never the count itself) beside the measurement, with the spread of the
// repeats and the error of the naive extrapolation: the efficiency measured at the largest smaller
// count carried forward.
#pragma once
#include <cstdint>
#include <vector>

#include "predict/predict_file.h"
#include "predict/scaling_prediction.h"
#include "predict/study_inputs.h"

namespace sb::predict {

// Rows for the counts of `gpus` above 1 that the study measured at the study's scaling and `batch`
// (per GPU under weak scaling, global under strong); `predicted_step_s` is NaN where the model lacks
// the compute at the per-GPU batch, the naive columns where the study lacks the 1-GPU point.
std::vector<CheckRow> leave_one_out(const StepModel& model, const StudyInputs& study, int64_t batch, const std::vector<int64_t>& gpus);

}  // namespace sb::predict
