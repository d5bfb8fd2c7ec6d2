#include "predict/leave_one_out.h"

#include <algorithm>
#include <map>

namespace sb::predict {
namespace {

struct Repeats {
  std::vector<double> step_s;
  double median() const {
    std::vector<double> v = step_s;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  }
  double spread() const {  // (max - min) / median
    const auto [lo, hi] = std::minmax_element(step_s.begin(), step_s.end());
    return (*hi - *lo) / median();
  }
};

}  // namespace

std::vector<CheckRow> leave_one_out(const StepModel& model, const StudyInputs& study, int64_t batch, const std::vector<int64_t>& gpus) {
  std::map<int64_t, Repeats> measured;  // by GPU count, at this batch
  for (const MeasuredConfig& c : study.configs)
    if (c.batch_size == batch) measured[c.gpus].step_s.push_back(c.step_s);
  std::vector<CheckRow> rows;
  for (int64_t n : gpus) {
    if (n < 2 || !measured.count(n)) continue;
    const Repeats& here = measured.at(n);
    CheckRow row;
    row.gpus = n;
    row.scaling = static_cast<int64_t>(study.mode);
    row.batch_size = batch;
    row.repeats = static_cast<int64_t>(here.step_s.size());
    row.measured_step_s = here.median();
    row.repeat_spread = here.spread();
    if (const std::optional<ScalingPoint> p = predict_point(model, n, study.mode, batch, study.bucket_mib)) {
      row.predicted_step_s = p->step_s;
      row.predicted_error = (p->step_s - row.measured_step_s) / row.measured_step_s;
    }
    // The naive extrapolation: the largest smaller measured count's efficiency, carried to n.
    const auto below = measured.lower_bound(n);
    if (measured.count(1) && below != measured.begin()) {
      const int64_t m = std::prev(below)->first;
      const double one = measured.at(1).median();
      const double at_m = std::prev(below)->second.median();
      // Weak scaling keeps the step's work per GPU: efficiency = step(1) / step(m). Strong scaling splits
      // it: efficiency = step(1) / (m step(m)).
      const bool weak = study.mode == Scaling::Weak;
      const double efficiency = weak ? one / at_m : one / (static_cast<double>(m) * at_m);
      row.naive_from_gpus = m;
      row.naive_step_s = weak ? one / efficiency : one / (static_cast<double>(n) * efficiency);
      row.naive_error = (row.naive_step_s - row.measured_step_s) / row.measured_step_s;
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace sb::predict
