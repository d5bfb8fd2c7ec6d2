// The results file of `scalebench comm`: the usual root attributes (metrics/results_file.h) and a
// `/comm` table with one row per all-reduce size and dtype. The layout is documented in
// docs/results_schema.md.
//
// Like the training files, HDF5 writes go to a working file, PATH.writing; after every row a copy of it
// replaces PATH atomically, so PATH exists (with `complete` = 0) from the start of the sweep and a job
// killed at any moment leaves a valid file holding every finished size. close() sets `end_time` and
// `complete` = 1 and moves the working file onto PATH.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "h5/handle.h"
#include "metrics/results_file.h"
#include "metrics/results_schema.h"

namespace sb {

// /comm: one row per all-reduce size and dtype, in the X(...) form of results_schema.h. Times are per
// all-reduce, in microseconds; `oop_` columns time the out-of-place all-reduce, the unprefixed ones the
// in-place one (the only one of version 1). algbw and busbw come from the mean over ranks. `collective`
// (a later addition; 0, the all-reduce, in files without it) names the row's collective.
#define SB_COMM_COLUMNS(X)                             \
  X(int64_t, bytes, 0, "bytes")                        \
  X(int64_t, count, 0, "1")                            \
  X(int64_t, dtype, 0, "1")                            \
  X(double, oop_time_us_mean, kNotMeasured, "us")      \
  X(double, oop_time_us_min_rank, kNotMeasured, "us")  \
  X(double, oop_time_us_max_rank, kNotMeasured, "us")  \
  X(double, oop_algbw_gbps, kNotMeasured, "GB/s")      \
  X(double, oop_busbw_gbps, kNotMeasured, "GB/s")      \
  X(int64_t, oop_wrong, 0, "1")                        \
  X(double, time_us_mean, kNotMeasured, "us")          \
  X(double, time_us_min_rank, kNotMeasured, "us")      \
  X(double, time_us_max_rank, kNotMeasured, "us")      \
  X(double, algbw_gbps, kNotMeasured, "GB/s")          \
  X(double, busbw_gbps, kNotMeasured, "GB/s")          \
  X(int64_t, wrong, 0, "1")                            \
  X(int64_t, is_model_size, 0, "1")                    \
  X(int64_t, collective, 0, "1")

struct CommRow {
  SB_COMM_COLUMNS(SB_ROW_FIELD)
};

// The /comm table's `comm_version` attribute. 2: out-of-place columns, algbw and busbw from the mean over
// ranks. Version 1 (files without the attribute): in place only, algbw and busbw from the slowest rank.
inline constexpr int64_t kCommTableVersion = 2;

// Attributes of /comm.
struct CommTableInfo {
  std::string backend;                     // "mpi" or "nccl"
  std::string op = "sum";                  // the reduction checked and timed
  int64_t ranks = 1;
  int64_t iterations = 0;                  // timed all-reduces per row
  int64_t warmup_iterations = 0;
  std::vector<std::string> dtype_names;    // dtype code -> name
  std::vector<std::string> collective_names;  // collective code -> name (comm/collective.h)
  std::vector<std::string> skipped_dtypes; // asked for but not run on this backend
  std::string note;                        // why they were skipped; "" when none were
  std::string model;                       // --comm-model
  int64_t model_elements = 0;              // its gradient elements
};

std::span<const Column> comm_columns();

class CommResultsFile {
 public:
  // Validates and creates the file with the root attributes (as ResultsFile does; sb::UserError for a
  // bad path, std::invalid_argument for bad metadata), then the empty /comm table with its attributes.
  CommResultsFile(const std::string& path, const RunMetadata& metadata, const CommTableInfo& info);
  CommResultsFile(const CommResultsFile&) = delete;
  CommResultsFile& operator=(const CommResultsFile&) = delete;

  void append(const CommRow& row);  // one row, then a flush and a published copy
  void close();                     // end_time, complete = 1; nothing may be written afterwards

 private:
  void flush_and_publish();
  std::string path_;
  std::string working_path_;
  h5::Handle file_;
  h5::Handle row_type_;
  h5::Handle table_;
};

}  // namespace sb
