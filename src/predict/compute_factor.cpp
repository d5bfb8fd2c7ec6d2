#include "predict/compute_factor.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/median.h"

namespace sb::predict {
namespace {

// The median unoverlapped phases of the study's runs at `gpus` and the recorded `batch`; NaN for none.
double median_unoverlapped(const StudyInputs& study, int64_t gpus, int64_t batch) {
  std::vector<double> seconds;
  for (const MeasuredConfig& c : study.configs) {
    if (c.gpus != gpus || c.batch_size != batch) continue;
    if (std::isnan(c.unoverlapped_s)) return c.unoverlapped_s;  // a run without the phase columns: no witness
    seconds.push_back(c.unoverlapped_s);
  }
  return median_of(seconds);  // NaN for none
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
  const double many = median_unoverlapped(study, gpus, batch);
  const double one = median_unoverlapped(study, 1, one_gpu_batch);
  if (!(many > 0) || !(one > 0)) return {};
  ComputeFactor f;
  f.measured = true;
  const double ratio = many / one;
  f.value = std::clamp(ratio, kMinComputeFactor, kMaxComputeFactor);
  f.at_bound = f.value != ratio;
  return f;
}

}  // namespace sb::predict
