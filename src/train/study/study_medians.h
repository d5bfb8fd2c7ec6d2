// A study in one table: for each combination of swept values and GPU count, the median of the steady
// epochs of all its repeats with their range, and the speedup and efficiency of those medians against the
// smallest count's (the figures analysis/report.py gives, docs/benchmarks.md). With one repeat they are
// the run's own figures; with several, every steady epoch of every repeat counts once, so a one-GPU run
// that differs between configurations of one process (docs/performance.md) moves the medians less.
#pragma once
#include <cstddef>
#include <limits>
#include <vector>

#include "train/study/scaling_study.h"

namespace sb {

struct StudyMedian {
  size_t combination = 0;
  int gpus = 0;
  int repeats = 0;              // runs behind the median
  int steady_epochs = 0;        // epochs behind the median, over all repeats
  double images_per_s = 0;      // median over the steady epochs
  double min_images_per_s = 0;  // their range
  double max_images_per_s = 0;
  double epoch_time_s = 0;      // median over the steady epochs
  double exposed_comm_fraction = 0;  // median over the repeats
  // The slowest rank's SM clock, median over the repeats that measured it (NaN where none did).
  double sm_clock_min_mhz = std::numeric_limits<double>::quiet_NaN();
  double speedup = 0;           // of the medians, against the smallest count of the same combination
  double efficiency = 0;
  double min_efficiency = 0;    // the range of the row's epochs over the baseline's median
  double max_efficiency = 0;
  bool baseline = false;        // the smallest count of its combination: the others' speedups divide by it
};

// One row per combination and GPU count, in the order of first appearance in `points`. A point without
// its epochs' figures counts as one epoch of its median.
std::vector<StudyMedian> study_medians(const std::vector<StudyPoint>& points);

// The spread of a row's steady epochs, (max - min) / median; 0 with one epoch.
double epoch_spread(const StudyMedian& row);

}  // namespace sb
