#include "predict/measured_steps.h"

#include <algorithm>

#include "core/median.h"

namespace sb::predict {

double RepeatedSteps::median() const { return median_of(step_s); }

double RepeatedSteps::spread() const {
  const auto [lo, hi] = std::minmax_element(step_s.begin(), step_s.end());
  return (*hi - *lo) / median();
}

std::map<int64_t, RepeatedSteps> measured_steps(const StudyInputs& study, int64_t batch) {
  std::map<int64_t, RepeatedSteps> measured;
  for (const MeasuredConfig& c : study.configs)
    if (c.batch_size == batch) measured[c.gpus].step_s.push_back(c.step_s);
  return measured;
}

std::optional<int64_t> largest_multi_gpu_count(const std::map<int64_t, RepeatedSteps>& measured, int64_t below) {
  const auto above = measured.lower_bound(below);
  if (above == measured.begin()) return std::nullopt;
  const int64_t m = std::prev(above)->first;
  if (m < 2) return std::nullopt;
  return m;
}

}  // namespace sb::predict
