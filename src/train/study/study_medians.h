// A repeated study in one table: for each combination of swept values and GPU count, the median of its
// repeats' rates, and the speedup and efficiency of those medians against the smallest count's (the
// definition analysis/report.py uses, docs/benchmarks.md). Each repeat's own efficiency moves with its
// one-GPU run, which can differ by several percent between configurations of one process
// (docs/performance.md); the medians and the baseline's spread say how far the efficiency can be trusted.
#pragma once
#include <cstddef>
#include <limits>
#include <vector>

#include "train/run_choices.h"
#include "train/study/scaling_study.h"

namespace sb {

struct StudyMedian {
  size_t combination = 0;
  int gpus = 0;
  int repeats = 0;              // points behind the median
  double images_per_s = 0;      // median over the repeats
  double min_images_per_s = 0;  // the repeats' range
  double max_images_per_s = 0;
  double epoch_time_s = 0;      // median over the repeats
  // The slowest rank's SM clock, median over the repeats that measured it (NaN where none did).
  double sm_clock_min_mhz = std::numeric_limits<double>::quiet_NaN();
  double speedup = 0;           // of the medians, against the smallest count of the same combination
  double efficiency = 0;
  bool baseline = false;        // the smallest count of its combination: the others' speedups divide by it
};

// One row per combination and GPU count, in the order of first appearance in `points`.
std::vector<StudyMedian> study_medians(const std::vector<StudyPoint>& points, Scaling mode);

// The spread of a row's repeats, (max - min) / median; 0 with one repeat.
double repeat_spread(const StudyMedian& row);

}  // namespace sb
