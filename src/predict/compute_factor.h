// The multi-GPU compute factors (docs/prediction.md, "The multi-GPU calibration"): how much longer each
// GPU's compute of a data-parallel step is than the 1-GPU compute the model scales, measured from the
// study's phases at one multi-GPU count. Two factors, because the two parts of the step change for
// different reasons:
//  - outside backward (data, forward, the optimizer, host time: the step less backward and the exposed
//    communication), where no all-reduce runs: the step waits for its slowest GPU, and data parallelism
//    costs each GPU some compute of its own;
//  - backward, which runs beside the gradient all-reduces: the same, plus what the all-reduces' kernels
//    take from it. Backward is carried per step as measured, so the all-reduces are then laid on the
//    slowed backward with no further contention.
// Each is the median over the count's repeats over the same part of the 1-GPU run the model takes at the
// same per-GPU batch (one_gpu_run): at the count itself the model's compute is the measured one. They are
// measured, not fitted to the step: the overlap fit then explains only the all-reduces (overlap_fit.h).
#pragma once
#include <cstdint>

#include "predict/study_inputs.h"

namespace sb::predict {

// A GPU a quarter slower or faster than the 1-GPU card outside backward is a fault (a throttled card,
// another job on it), not the spread of one node's cards: the factor is clamped there and flagged.
constexpr double kMinComputeFactor = 0.8;
constexpr double kMaxComputeFactor = 1.25;
// Backward may lose more to the all-reduces beside it (over a transport whose proxies share the GPU), but
// five times slower than alone is a fault too.
constexpr double kMaxBackwardFactor = 5;

struct ComputeFactor {
  double value = 1;     // outside backward
  double backward = 1;  // backward, with the all-reduces beside it
  bool measured = false;           // false: no witness, both factors are 1
  bool at_bound = false;           // `value`'s measured ratio lay past a bound and was clamped to it
  bool backward_at_bound = false;  // the same for `backward`
};

// At the study's `gpus` (2 or more) and `batch` (per GPU under weak scaling, global under strong).
// Unmeasured where the study lacks that count or the 1-GPU runs at its per-GPU batch, or a run there
// lacks the phase columns.
ComputeFactor measure_compute_factor(const StudyInputs& study, int64_t gpus, int64_t batch);

}  // namespace sb::predict
