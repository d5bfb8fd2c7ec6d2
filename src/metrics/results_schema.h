// The rows of the results file's tables and their HDF5 types. results/README.md documents every
// column; bump kResultsSchemaVersion when a column or attribute changes meaning or goes away.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "h5/handle.h"

namespace sb {

inline constexpr int64_t kResultsSchemaVersion = 1;

// Marks a column that was not measured (no evaluation this epoch, no power sensor, ...).
inline constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

// The per-step phases, in the order of the last axis of /steps.
inline constexpr std::array<const char*, 5> kStepPhases = {"data", "forward", "backward", "comm", "optimizer"};

// One row of /epochs. Times are seconds of wall time; "max" is over ranks (the slowest rank sets the pace).
// NaN, never 0, where nothing was timed (an epoch resumed after its last step).
struct EpochRow {
  int64_t epoch = 0;                      // 1 for the first epoch
  double wall_time_max_s = kNotMeasured;  // the epoch's wall time: max, mean, min over ranks
  double wall_time_mean_s = kNotMeasured;
  double wall_time_min_s = kNotMeasured;
  double images_per_s = kNotMeasured;     // training images of all ranks / wall_time_max_s
  double train_loss = kNotMeasured;       // mean over the epoch's training samples, all ranks
  double test_loss = kNotMeasured;        // mean over the test set
  double test_accuracy = kNotMeasured;    // fraction in [0, 1]
  double learning_rate = kNotMeasured;    // at the epoch's last step
  double exposed_comm_s = kNotMeasured;   // time compute waited for communication, max over ranks
  double energy_j = kNotMeasured;         // energy of all GPUs together during the epoch
  int64_t peak_memory_bytes = -1;         // peak device memory, max over ranks; -1 where not measured
  double data_s = kNotMeasured;           // per-phase totals over the epoch, max over ranks
  double forward_s = kNotMeasured;
  double backward_s = kNotMeasured;
  double comm_s = kNotMeasured;           // all communication, overlapped with compute or not
  double optimizer_s = kNotMeasured;
  // Steps of this epoch done before a --resume (by the run that wrote the checkpoint); 0 for an epoch
  // run whole. Where it is > 0 the row is partial: its timings cover only the steps after the resume.
  int64_t steps_resumed = 0;
};

// One row of /study: one GPU count of a scaling study.
struct StudyRow {
  int64_t gpus = 0;
  double images_per_s = kNotMeasured;
  double epoch_time_s = kNotMeasured;           // wall time of one epoch (max over ranks)
  double speedup = kNotMeasured;                // strong: T(baseline) / T(gpus); weak: throughput ratio
  double efficiency = kNotMeasured;             // speedup / (gpus / baseline_gpus)
  double exposed_comm_fraction = kNotMeasured;  // exposed communication / epoch time
  double time_to_accuracy_s = kNotMeasured;     // NaN when the study has no target or never reached it
};

// A column of a table: name, unit (for the "units" attribute) and where it lives in the row struct.
struct Column {
  const char* name;
  const char* unit;
  size_t offset;
  bool is_integer;  // int64, else float64
};

std::span<const Column> epoch_columns();
std::span<const Column> study_columns();

// The compound type of a table in memory (native types at the struct's offsets). The file stores the
// same members, packed.
h5::Handle compound_type(std::span<const Column> columns, size_t row_size);
h5::Handle packed_copy(hid_t type);

// Column units in column order, as the tables' "units" attribute holds them.
std::vector<std::string> column_units(std::span<const Column> columns);

}  // namespace sb
