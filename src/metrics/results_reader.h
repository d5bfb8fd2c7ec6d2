// Reads a results file back: for tests, and for tools that check a file (the analysis itself is Python).
// Opens read-only without locking, so a file can be read while a run is still appending to it.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "h5/handle.h"
#include "metrics/comm_results.h"
#include "metrics/results_file.h"
#include "metrics/results_schema.h"

namespace sb {

struct StepSamples {
  std::vector<int64_t> step_numbers;
  int64_t ranks = 0;
  std::vector<int64_t> phase_ns;  // row-major [ranks][step_numbers.size()][kStepPhases.size()]
  std::vector<std::string> phases;  // the `phases` attribute: the names of the last axis
};

class ResultsReader {
 public:
  // Throws sb::UserError when `path` does not exist or is not an HDF5 file.
  explicit ResultsReader(const std::string& path);

  // Attributes of the object at `object` ("/" for the root). Missing ones throw std::out_of_range.
  bool has_attribute(const std::string& name, const std::string& object = "/") const;
  std::string string_attribute(const std::string& name, const std::string& object = "/") const;
  std::vector<std::string> string_list_attribute(const std::string& name, const std::string& object = "/") const;
  int64_t int_attribute(const std::string& name, const std::string& object = "/") const;
  double double_attribute(const std::string& name, const std::string& object = "/") const;

  bool has(const std::string& object) const;  // a group or dataset at this absolute path

  // The tables of a run: `run` is "/" for `train`, "/configs/gpus_<n>" for a configuration of `scale`.
  std::vector<EpochRow> epochs(const std::string& run = "/") const;
  std::vector<std::string> epoch_column_names(const std::string& run = "/") const;  // as stored, in order
  // The members of the table at `table` ("/study", "/comm", "/configs/gpus_2/epochs"), as stored, in order.
  std::vector<std::string> column_names(const std::string& table) const;
  std::vector<std::vector<double>> epoch_times_per_rank(const std::string& run = "/") const;  // [epoch][rank]
  StepSamples steps(const std::string& run = "/") const;  // empty when the run sampled no steps
  // The run's `bucket_ready` (seconds from the start of backward, one per bucket); empty where the file
  // has none (schema 1 and 2, the CPU engine). Throws UserError when it is not 1-D.
  std::vector<double> bucket_ready(const std::string& run = "/") const;

  // A study's /study rows; a schema-1 table's rows hold the later columns' "not measured" values
  // (repeat 1, no recorded batch size, precision or workers).
  std::vector<StudyRow> study() const;
  StudyInfo study_info() const;  // of schema 1: no swept columns, one repeat
  std::vector<EfficiencySplitRow> efficiency_split() const;  // empty in files without the table
  std::vector<CommRow> comm() const;  // the table of `scalebench comm`
  std::vector<int64_t> config_gpus() const;  // the GPU count of each group under /configs, ascending
  std::vector<std::string> config_names() const;  // the groups under /configs ("gpus_2_batch_size_64"), by name

 private:
  h5::Handle open_object(const std::string& object) const;
  h5::Handle open_dataset(const std::string& run, const char* name) const;
  h5::Handle open_dataset_at(const std::string& path) const;
  // Every row of a table, each column read by name into its place in Row (the columns' own list).
  template <class Row>
  std::vector<Row> read_rows(const std::string& parent, const char* name, std::span<const Column> columns) const;
  h5::Handle file_;
};

}  // namespace sb
