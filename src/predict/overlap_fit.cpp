#include "predict/overlap_fit.h"

#include <algorithm>

namespace sb::predict {
namespace {

constexpr int kBisections = 60;  // halves [0, bound] to below 1e-17 of it

OverlapCalibration with_value(int64_t gpus, const ComputeFactor& compute, OverlapParameter parameter, double value) {
  OverlapCalibration c;
  c.gpus = gpus;
  c.compute = compute;
  c.parameter = parameter;
  if (parameter == OverlapParameter::Contention) c.overlap.contention = value;
  else if (parameter == OverlapParameter::Wait) c.overlap.wait_s = value;
  else c.overlap.comm_scale = value;
  return c;
}

}  // namespace

std::optional<OverlapCalibration> fit_overlap(const StepModel& model, int64_t gpus, Scaling scaling, int64_t batch,
                                              double bucket_mib, double measured_step_s, const ComputeFactor& compute) {
  StepModel trial = model;
  trial.calibration = {};
  if (!predict_point(trial, gpus, scaling, batch, bucket_mib)) return std::nullopt;
  auto step = [&](OverlapParameter parameter, double value) {
    trial.calibration = with_value(gpus, compute, parameter, value);
    return predict_point(trial, gpus, scaling, batch, bucket_mib)->step_s;
  };
  const double uncalibrated = step(OverlapParameter::Contention, 0);
  const bool needs_more = uncalibrated <= measured_step_s * (1 + 1e-12);  // within rounding: nothing left to explain
  // With the compute factors measured, the simulated step here is the measured compute plus the exposed
  // all-reduces: what the measured step keeps beyond it is a wait after backward, the difference itself
  // (stretching all-reduces that hide behind backward does not explain it). Where nothing overlaps
  // backward, the time after it is the all-reduce itself: its factor.
  if (compute.measured && needs_more && model.buckets_overlap_backward)
    return with_value(gpus, compute, OverlapParameter::Wait, std::max(0.0, measured_step_s - uncalibrated));
  const bool contention_moves = step(OverlapParameter::Contention, kMaxContention) > uncalibrated;
  const bool contention_fits = !compute.measured && needs_more && contention_moves;
  const OverlapParameter parameter = contention_fits ? OverlapParameter::Contention : OverlapParameter::CommScale;
  double lo = 0, hi = parameter == OverlapParameter::Contention ? kMaxContention : kMaxCommScale;
  bool at_bound = false;
  if (step(parameter, hi) < measured_step_s) {
    lo = hi;
    at_bound = true;
  } else if (step(parameter, lo) > measured_step_s) {
    hi = lo;
    at_bound = true;
  }
  for (int i = 0; i < kBisections && lo < hi; ++i) {  // the step does not fall as the parameter grows
    const double mid = 0.5 * (lo + hi);
    (step(parameter, mid) < measured_step_s ? lo : hi) = mid;
  }
  OverlapCalibration fitted = with_value(gpus, compute, parameter, 0.5 * (lo + hi));
  fitted.at_bound = at_bound;
  return fitted;
}

}  // namespace sb::predict
