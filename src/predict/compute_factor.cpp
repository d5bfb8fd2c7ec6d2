#include "predict/compute_factor.h"

#include <algorithm>
#include <vector>

#include "core/median.h"

namespace sb::predict {
namespace {

struct Parts {
  double outside = 0, backward = 0;
};

Parts parts_of(const StepCompute& c) { return {c.before_backward_s + c.optimizer_s, c.backward_s}; }

double clamped(double ratio, double lo, double hi, bool& at_bound) {
  const double value = std::clamp(ratio, lo, hi);
  at_bound = value != ratio;
  return value;
}

}  // namespace

ComputeFactor measure_compute_factor(const StudyInputs& study, int64_t gpus, int64_t batch) {
  if (gpus < 2) return {};
  // A 1-GPU run's recorded batch is its per-GPU batch under either scaling.
  int64_t one_gpu_batch = batch;
  if (study.mode == Scaling::Strong) {
    if (batch % gpus != 0) return {};
    one_gpu_batch = batch / gpus;
  }
  const MeasuredConfig* one = one_gpu_run(study, one_gpu_batch);
  if (!one || !one->phases_measured) return {};
  std::vector<double> outside, backward;
  for (const MeasuredConfig& c : study.configs) {
    if (c.gpus != gpus || c.batch_size != batch) continue;
    if (!c.phases_measured) return {};  // a run without the phase columns: no witness
    outside.push_back(parts_of(c.phases).outside);
    backward.push_back(parts_of(c.phases).backward);
  }
  const Parts reference = parts_of(one->phases);
  if (outside.empty() || !(reference.outside > 0) || !(reference.backward > 0)) return {};
  ComputeFactor f;
  f.measured = true;
  f.value = clamped(median_of(outside) / reference.outside, kMinComputeFactor, kMaxComputeFactor, f.at_bound);
  f.backward = clamped(median_of(backward) / reference.backward, kMinComputeFactor, kMaxBackwardFactor, f.backward_at_bound);
  return f;
}

}  // namespace sb::predict
