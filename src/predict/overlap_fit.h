// The overlap calibration (docs/prediction.md): one parameter fitted so that the simulated step at a
// measured GPU count equals the measured median step there, after the compute factors measured there.
// Where the simulated step is already slower than measured, or nothing overlaps backward, the factor k
// on the sweep's all-reduce times. Otherwise what the step keeps beyond the simulation: with measured
// compute factors (backward as it ran beside the all-reduces), a wait after backward, measured as that
// difference; without them, backward's contention c >= 0 beside an all-reduce. k and c move the step
// monotonically, so their fit is a bisection.
#pragma once
#include <cstdint>
#include <optional>

#include "predict/scaling_prediction.h"

namespace sb::predict {

constexpr double kMaxContention = 4;  // backward 5 times slower beside an all-reduce: past that, not contention
constexpr double kMaxCommScale = 10;

// The calibration at `gpus` (a count the model can lay out), starting from `model` without its own
// calibration: `compute` (measured there, compute_factor.h) is fixed first, and the overlap explains what
// remains of the measured step; `at_bound` when a bound stops the fit short. nullopt where the model
// lacks the compute at the count's per-GPU batch.
std::optional<OverlapCalibration> fit_overlap(const StepModel& model, int64_t gpus, Scaling scaling, int64_t batch, double bucket_mib,
                                              double measured_step_s, const ComputeFactor& compute = {});

}  // namespace sb::predict
