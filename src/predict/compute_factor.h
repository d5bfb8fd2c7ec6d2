// The multi-GPU compute factor (docs/prediction.md, "The multi-GPU calibration"): how much slower the
// compute of a data-parallel step is than the 1-GPU compute (the step waits for the slowest GPU, whose
// phases the study records, and data parallelism costs each GPU some compute of its own), seen in the
// phases no all-reduce runs beside (data, forward, optimizer). It is the median of those phases over a
// measured multi-GPU count's repeats, over their median on one GPU at the same per-GPU batch. It is
// measured, not fitted to the step: the overlap fit then explains only what remains (overlap_fit.h).
#pragma once
#include <cstdint>

#include "predict/study_inputs.h"

namespace sb::predict {

// A GPU a quarter slower or faster than the 1-GPU card is a fault (a throttled card, another job on it),
// not the spread of one node's cards: the factor is clamped there and flagged.
constexpr double kMinComputeFactor = 0.8;
constexpr double kMaxComputeFactor = 1.25;

struct ComputeFactor {
  double value = 1;
  bool measured = false;  // false: no witness, the factor is 1
  bool at_bound = false;  // the measured ratio lay past a bound and was clamped to it
};

// At the study's `gpus` (2 or more) and `batch` (per GPU under weak scaling, global under strong).
// Unmeasured where the study lacks that count or the 1-GPU runs at its per-GPU batch, or the file lacks
// the phase columns.
ComputeFactor measure_compute_factor(const StudyInputs& study, int64_t gpus, int64_t batch);

}  // namespace sb::predict
