#include "predict/leave_one_out.h"

#include <iterator>

#include "predict/compute_factor.h"
#include "predict/measured_steps.h"
#include "predict/overlap_fit.h"
#include "predict/rank_spread.h"

namespace sb::predict {
namespace {

OverlapCalibration calibration_from(const StepModel& model, const StudyInputs& study, int64_t batch,
                                    const std::map<int64_t, RepeatedSteps>& measured, int64_t below) {
  const std::optional<int64_t> m = largest_multi_gpu_count(measured, below);
  if (!m || !model.allreduce.layout_problem(*m).empty()) return {};
  const ComputeFactor compute = measure_compute_factor(study, *m, batch);
  std::optional<OverlapCalibration> fitted = fit_overlap(model, *m, study.mode, batch, study.bucket_mib, measured.at(*m).median(), compute);
  if (!fitted) return {};
  fitted->rank_spread = measured_rank_spread(study, *m, batch);  // adds nothing at m itself, where it was measured
  return *fitted;
}

}  // namespace

OverlapCalibration calibration_below(const StepModel& model, const StudyInputs& study, int64_t batch, int64_t below) {
  return calibration_from(model, study, batch, measured_steps(study, batch), below);
}

std::vector<CheckRow> leave_one_out(const StepModel& model, const StudyInputs& study, int64_t batch, const std::vector<int64_t>& gpus) {
  const std::map<int64_t, RepeatedSteps> measured = measured_steps(study, batch);
  std::vector<CheckRow> rows;
  for (int64_t n : gpus) {
    if (n < 2 || !measured.count(n)) continue;
    const RepeatedSteps& here = measured.at(n);
    CheckRow row;
    row.gpus = n;
    row.scaling = static_cast<int64_t>(study.mode);
    row.batch_size = batch;
    row.repeats = static_cast<int64_t>(here.step_s.size());
    row.measured_step_s = here.median();
    row.repeat_spread = here.spread();
    StepModel calibrated = model;
    calibrated.calibration = calibration_from(model, study, batch, measured, n);
    row.calibration_gpus = calibrated.calibration.gpus;
    row.calibration_parameter = static_cast<int64_t>(calibrated.calibration.parameter);
    row.calibration_value = calibrated.calibration.value();
    row.calibration_at_bound = calibrated.calibration.at_bound ? 1 : 0;
    row.calibration_applied = calibration_applies(calibrated, n) ? 1 : 0;
    if (calibrated.calibration.compute.measured) {
      row.compute_factor = calibrated.calibration.compute.value;
      row.compute_factor_at_bound = calibrated.calibration.compute.at_bound ? 1 : 0;
      row.backward_factor = calibrated.calibration.compute.backward;
      row.backward_factor_at_bound = calibrated.calibration.compute.backward_at_bound ? 1 : 0;
      row.compute_factor_applied = compute_factor_applies(calibrated, n) ? 1 : 0;
    }
    row.rank_spread = calibrated.calibration.rank_spread;
    if (const std::optional<ScalingPoint> p = predict_point(calibrated, n, study.mode, batch, study.bucket_mib)) {
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
