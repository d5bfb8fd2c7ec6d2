// The rows of the results file's tables and their HDF5 types. docs/results_schema.md documents every
// column; bump kResultsSchemaVersion when a column or attribute changes meaning or goes away.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>


#include "h5/handle.h"
#include "metrics/not_measured.h"
#include "metrics/step_phases.h"

namespace sb {

inline constexpr int64_t kResultsSchemaVersion = 3;

// The tables' columns, one row each: X(type, name, value where not measured, unit). The row structs
// below and the column lists of the writer and the reader (epoch_columns(), ...) are made from these
// rows; a column's type is int64_t or double. docs/results_schema.md says what each column means.
//
// /epochs: one row per epoch. Times are seconds of wall time; "max" is over ranks (the slowest rank sets
// the pace); NaN, never 0, where nothing was timed (an epoch resumed after its last step).
#define SB_EPOCH_COLUMNS(X)                              \
  X(int64_t, epoch, 0, "1")                              \
  X(double, wall_time_max_s, kNotMeasured, "s")          \
  X(double, wall_time_mean_s, kNotMeasured, "s")         \
  X(double, wall_time_min_s, kNotMeasured, "s")          \
  X(double, images_per_s, kNotMeasured, "images/s")      \
  X(double, train_loss, kNotMeasured, "1")               \
  X(double, test_loss, kNotMeasured, "1")                \
  X(double, test_accuracy, kNotMeasured, "1")            \
  X(double, learning_rate, kNotMeasured, "1")            \
  X(double, exposed_comm_s, kNotMeasured, "s")           \
  X(double, energy_j, kNotMeasured, "J")                 \
  X(int64_t, peak_memory_bytes, -1, "bytes")             \
  X(double, data_s, kNotMeasured, "s")                   \
  X(double, forward_s, kNotMeasured, "s")                \
  X(double, backward_s, kNotMeasured, "s")               \
  X(double, backward_overlap_s, kNotMeasured, "s")       \
  X(double, comm_s, kNotMeasured, "s")                   \
  X(double, optimizer_s, kNotMeasured, "s")              \
  X(int64_t, steps_resumed, 0, "1")                      \
  X(double, sm_clock_min_mhz, kNotMeasured, "MHz")       \
  X(double, sm_clock_max_mhz, kNotMeasured, "MHz")       \
  X(double, temperature_min_c, kNotMeasured, "C")        \
  X(double, temperature_max_c, kNotMeasured, "C")        \
  X(double, power_limited_fraction, kNotMeasured, "1")   \
  X(double, thermal_limited_fraction, kNotMeasured, "1") \
  X(double, input_read_s, kNotMeasured, "s")             \
  X(double, input_decode_s, kNotMeasured, "s")           \
  X(double, input_augment_s, kNotMeasured, "s")          \
  X(double, input_copy_s, kNotMeasured, "s")             \
  X(double, input_bytes_per_s, kNotMeasured, "bytes/s")  \
  X(double, input_images_per_worker_s, kNotMeasured, "images/s") \
  X(int64_t, images_skipped, -1, "1")                    \
  X(int64_t, gpu_decode_cpu_fallbacks, -1, "1")         \
  X(int64_t, peak_allocated_bytes, -1, "bytes")

// /study: one row per configuration of a scaling study (GPU count x swept values x repeat). The swept
// options' columns are named by their configuration JSON keys (train_options.cpp); a named option's
// column holds the index of its value in the table's `<column>_names` attribute.
#define SB_STUDY_COLUMNS(X)                            \
  X(int64_t, gpus, 0, "1")                             \
  X(int64_t, repeat, 1, "1")                           \
  X(int64_t, batch_size, -1, "1")                      \
  X(int64_t, precision, -1, "1")                       \
  X(int64_t, workers, -1, "1")                         \
  X(int64_t, parallel, -1, "1")                        \
  X(double, images_per_s, kNotMeasured, "images/s")    \
  X(double, epoch_time_s, kNotMeasured, "s")           \
  X(double, speedup, kNotMeasured, "1")                \
  X(double, efficiency, kNotMeasured, "1")             \
  X(double, exposed_comm_fraction, kNotMeasured, "1")  \
  X(double, time_to_accuracy_s, kNotMeasured, "s")   \
  X(double, wall_to_accuracy_s, kNotMeasured, "s")   \
  X(double, sm_clock_min_mhz, kNotMeasured, "MHz")

// /efficiency_split: one row per /study row, in the same order: the row's loss of efficiency in parts
// (train/study/efficiency_split.h), each a fraction of the ideal efficiency.
#define SB_EFFICIENCY_SPLIT_COLUMNS(X)                \
  X(int64_t, gpus, 0, "1")                            \
  X(int64_t, repeat, 1, "1")                          \
  X(double, efficiency_loss, kNotMeasured, "1")       \
  X(double, exposed_comm, kNotMeasured, "1")          \
  X(double, skew, kNotMeasured, "1")                  \
  X(double, skew_compute, kNotMeasured, "1")          \
  X(double, skew_input, kNotMeasured, "1")            \
  X(double, skew_optimizer, kNotMeasured, "1")        \
  X(double, input, kNotMeasured, "1")                 \
  X(double, compute, kNotMeasured, "1")               \
  X(double, unexplained, kNotMeasured, "1")           \
  X(double, step_s, kNotMeasured, "s")                \
  X(double, ideal_step_s, kNotMeasured, "s")          \
  X(int64_t, median_rank, -1, "1")                    \
  X(int64_t, steps, 0, "1")

// A field of a row struct, with the value that means "not measured".
#define SB_ROW_FIELD(type, name, missing, unit) type name = missing;

struct EpochRow {
  SB_EPOCH_COLUMNS(SB_ROW_FIELD)
};

struct StudyRow {
  SB_STUDY_COLUMNS(SB_ROW_FIELD)
};

struct EfficiencySplitRow {
  SB_EFFICIENCY_SPLIT_COLUMNS(SB_ROW_FIELD)
};

enum class ColumnType { Int64, Float64 };

// A column of a table: its name, its unit (for the table's "units" attribute), its type and where it
// lives in the row struct. The writer creates the table's compound type from these, and the reader
// reads each column by name into the same place.
struct Column {
  const char* name;
  const char* unit;
  ColumnType type;
  size_t offset;
};

template <class T>
constexpr ColumnType column_type_of() {
  static_assert(std::is_same_v<T, int64_t> || std::is_same_v<T, double>, "a column is int64_t or double");
  return std::is_same_v<T, int64_t> ? ColumnType::Int64 : ColumnType::Float64;
}

// The Column of one X(...) row, inside a function that names the row struct `Row`:
//   using Row = EpochRow; static const Column columns[] = {SB_EPOCH_COLUMNS(SB_COLUMN_ENTRY)};
#define SB_COLUMN_ENTRY(type, name, missing, unit) Column{#name, unit, column_type_of<type>(), offsetof(Row, name)},

std::span<const Column> epoch_columns();
std::span<const Column> study_columns();
std::span<const Column> efficiency_split_columns();

// The compound type of a table in memory (native types at the struct's offsets). The file stores the
// same members, packed.
h5::Handle compound_type(std::span<const Column> columns, size_t row_size);
h5::Handle packed_copy(hid_t type);

// Column units in column order, as the tables' "units" attribute holds them.
std::vector<std::string> column_units(std::span<const Column> columns);

}  // namespace sb
