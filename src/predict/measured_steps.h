// The study's measured steps at one batch, grouped by GPU count: the repeats, their median and spread.
// The leave-one-out check compares with them and the overlap calibration fits to them.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "predict/study_inputs.h"

namespace sb::predict {

struct RepeatedSteps {
  std::vector<double> step_s;  // one per repeat
  double median() const;
  double spread() const;  // (slowest - fastest) / median
};

// By GPU count: the configurations recorded at `batch` (per GPU under weak scaling, global under strong).
std::map<int64_t, RepeatedSteps> measured_steps(const StudyInputs& study, int64_t batch);

// The largest multi-GPU count of `measured` below `below` (2 <= m < below); nullopt when there is none.
std::optional<int64_t> largest_multi_gpu_count(const std::map<int64_t, RepeatedSteps>& measured, int64_t below);

}  // namespace sb::predict
