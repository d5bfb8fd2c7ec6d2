// The slowest rank (docs/prediction.md, "The slowest rank"): a data-parallel step ends when its slowest
// GPU has finished, and the GPUs of one job never run exactly alike (their clocks under the power cap,
// their temperatures, jitter from step to step). The model takes each rank's compute in a step as the
// ranks' mean plus a deviation drawn independently from a normal distribution, whose standard deviation
// (relative to the compute) it measures from the study's sampled steps at the calibration count. The
// step then waits E[max of N deviations], which grows like sqrt(2 ln N): nothing at one GPU, 0.56 standard
// deviations at 2, 1.03 at 4, 3.25 at 1024.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

#include "metrics/results_reader.h"
#include "predict/study_inputs.h"

namespace sb::predict {

// E[max of n independent standard normal variables]: 0 for n = 1, 1/sqrt(pi) for 2, 1.5/sqrt(pi) for 3.
// Throws std::invalid_argument for n < 1.
double expected_max_of_normals(int64_t n);

// The ranks' spread in one configuration's sampled steps from `first_step` on: each rank's own compute
// in a step (every phase but `comm`, the wait for the all-reduces, which the slower ranks' lateness
// fills on the faster ones) about that step's mean over the ranks, as a standard deviation (with the
// ranks - 1 correction) relative to the mean compute. nullopt for one rank, no steps from `first_step`
// or no `comm` phase among the samples' phases.
std::optional<double> rank_spread_of(const StepSamples& samples, size_t first_step = 0);

// The median over the repeats at `gpus` and `batch` of their spreads; 0 where none was measured.
double measured_rank_spread(const StudyInputs& study, int64_t gpus, int64_t batch);

// What the slowest of `gpus` ranks adds to a step of `compute_s` beyond what the slowest of `from` did
// (negative below `from`), at `spread`.
double slowest_rank_delay_s(double spread, double compute_s, int64_t gpus, int64_t from);

}  // namespace sb::predict
