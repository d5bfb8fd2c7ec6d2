// The HDF5 results file, written by one rank (rank 0 of the job). The layout is documented in
// docs/results_schema.md.
//
// Life of a file: the constructor checks the path and the metadata and only then creates the file, with
// every root attribute and `complete` = 0. Each append writes its rows and flushes, so a job killed
// between appends leaves a valid file holding every finished epoch. close() records end_time and
// `complete` = 1; a file closed without it (an exception unwound past it) stays valid with `complete` = 0.
//
// A resumed run continues its file (ResultsOpen::Continue): the rows already there stay, new ones are
// appended, and `path` is not touched until the first new row, so a resume that fails before it leaves
// the file byte-identical. Writes go to a working file of this run (unique_working_path), published to
// `path` after every flush (once for the writes of a RunWriter::PublishOnce scope) and moved into place
// when the file is closed or destroyed.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "h5/handle.h"
#include "metrics/results_schema.h"

namespace sb {

// A numeric attribute by name (the end-of-run figures, the start-up parts).
struct NamedValue {
  std::string name;
  double value = 0;
};

// What the root attributes record about the job.
struct RunMetadata {
  std::string tool_version = SCALEBENCH_VERSION;
  std::string git_sha;
  std::string command_line;
  std::string config_json;               // the full configuration, canonical JSON
  int64_t world_size = 1;
  int64_t node_count = 1;
  std::vector<std::string> hosts;        // one per rank, in rank order
  std::vector<std::string> gpu_models;   // one per rank; "cpu" on the CPU backend
  std::string cuda_version = "n/a";      // "n/a" where the library is absent
  std::string cudnn_version = "n/a";
  std::string nccl_version = "n/a";
  std::string mpi_version = "n/a";
  std::string start_time;                // ISO 8601 UTC; empty: the time the file is created
  std::string slurm_job_id;              // "" outside Slurm
  std::string launcher = "none";         // LauncherInfo::name
  std::string node_list;                 // Slurm's node list, "" outside Slurm
  int64_t ranks_per_node = 0;            // as the launcher states it; 0 where unknown
};

// Attributes of /study.
struct StudyInfo {
  std::string mode;                      // "strong" or "weak"
  int64_t baseline_gpus = 1;             // speedup and efficiency are relative to this GPU count
  double target_accuracy = kNotMeasured; // the time-to-accuracy target; NaN when there is none
  std::vector<std::string> swept{};      // the study columns of the swept options, in sweep order
  int64_t repeats = 1;                   // runs of each configuration
  // For each column that holds a named option's value: the column and the names its codes index.
  std::vector<std::pair<std::string, std::vector<std::string>>> value_names{};
  // Epochs each configuration ran before its measured ones, left out of the figures; -1 where the file
  // does not record them (files written before the attribute).
  int64_t settle_epochs = -1;
};

// Where one configuration of a study lives: /configs/gpus_<gpus><suffix>.
struct ConfigGroup {
  int64_t gpus = 1;
  std::string suffix;       // "" or "_batch_size_64_precision_bf16", "_repeat_2", ...
  int64_t repeat = 1;
  std::string config_json;  // the configuration's own options; may be ""
  int64_t ranks = 0;        // the ranks its tables hold: 0 means `gpus` (DDP); 1 when one process drives
                            // the GPUs (nn.DataParallel, --parallel dp)
};

// The tables of one training run: at the root for `train`, under /configs/gpus_<n> for each
// configuration of `scale`.
class ResultsFile;

class RunWriter {
 public:
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;

  int64_t ranks() const { return ranks_; }
  int64_t epochs_written() const { return epochs_written_; }

  // Appends one row to `epochs` and each rank's epoch wall time (rank order, ranks() values) to
  // `epoch_times_per_rank`, then flushes the file.
  void append_epoch(const EpochRow& row, std::span<const double> epoch_time_per_rank_s);

  // Appends sampled steps to `steps` ([rank, step, phase], ns) and their global step numbers to
  // `step_numbers`, then flushes. `phase_ns` is row-major [ranks()][step_numbers.size()][kStepPhases.size()].
  void append_steps(std::span<const int64_t> step_numbers, std::span<const int64_t> phase_ns);

  // A numeric attribute of the run's group (a `scale` configuration's start-up parts), then flushes.
  void write_attribute(const char* name, double value);
  // Several at once, then one flush.
  void write_attributes(std::span<const NamedValue> values);

  // While one lives, the writes above flush but publish nothing; its end publishes once what they wrote,
  // so that an epoch's row, steps and bucket times cost one copy of the file, and appear together.
  class PublishOnce {
   public:
    explicit PublishOnce(RunWriter& run);
    ~PublishOnce() noexcept(false);  // a failed publish ends the run as any failed write does
    PublishOnce(const PublishOnce&) = delete;
    PublishOnce& operator=(const PublishOnce&) = delete;

   private:
    ResultsFile* file_;
  };
  // Appends one epoch's block to the float64 table `name` of the run's group, shape [epoch, block_shape...,
  // column]: `values` is row-major with block_shape then columns.size() per epoch. Created on first use
  // with the string-list attributes `columns` and `units` (one per column) and `extra` (name, list); a
  // continued file's table is extended. Then flushes.
  struct TableLayout {
    std::vector<hsize_t> block_shape;
    std::vector<std::string> columns, units;
    std::vector<std::pair<std::string, std::vector<std::string>>> extra;
  };
  void append_table_block(const char* name, const TableLayout& layout, std::span<const double> values);
  // Writes (or replaces) `bucket_ready`: seconds from the start of backward until each gradient bucket
  // is ready, in launch order (docs/results_schema.md), then flushes. Nothing for an empty list.
  void write_bucket_ready(std::span<const double> seconds);

 private:
  friend class ResultsFile;
  // Creates the run's tables in `group`, or opens them where the group has them (a continued file).
  RunWriter(hid_t group, int64_t ranks, ResultsFile* owner);
  void open_tables();
  void create_tables();
  void flush();

  hid_t group_;  // owned by ResultsFile
  ResultsFile* owner_;
  int64_t ranks_;
  int64_t epochs_written_ = 0;
  h5::Handle epoch_type_;
  h5::Handle epochs_;
  h5::Handle epoch_times_;
  h5::Handle steps_;          // created by the first append_steps
  h5::Handle step_numbers_;
  h5::Handle bucket_ready_;   // created by the first write_bucket_ready
};

enum class ResultsOpen {
  Create,    // create the file, replacing one at the path
  Continue,  // append to the `train` file of the run being resumed (check it first: src/train/checkpoint/resume_check.h)
};

class ResultsFile {
 public:
  // Validates `path` (check_output_writable: sb::UserError) and `metadata` (std::invalid_argument)
  // before creating anything. Create: creates or replaces the file and writes the root attributes.
  // Continue: copies the existing file to the working file, sets `complete` = 0 and `end_time` = "",
  // records the new configuration in `config_json` and the command line in `resume_command_lines`.
  ResultsFile(const std::string& path, const RunMetadata& metadata, ResultsOpen mode = ResultsOpen::Create);
  ~ResultsFile();
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;

  const std::string& path() const { return path_; }

  // `train`: the tables at the root, for metadata.world_size ranks. Created on the first call.
  RunWriter& main_run();

  // `scale`: the tables of one configuration, in /configs/gpus_<gpus><suffix>, for its ranks.
  RunWriter& add_config(const ConfigGroup& config);
  RunWriter& add_config(int64_t gpus, const std::string& config_json = "") { return add_config(ConfigGroup{gpus, "", 1, config_json}); }

  // `scale`: creates the empty /study table with its attributes; then one row per finished configuration.
  void begin_study(const StudyInfo& info);
  void append_study_row(const StudyRow& row);
  // `scale`: one row of /efficiency_split per /study row, in the same order; the table is created with
  // the first.
  void append_efficiency_split_row(const EfficiencySplitRow& row);

  // A numeric root attribute outside RunMetadata (e.g. model FLOPs per sample); published at once.
  void write_root_attribute(const char* name, double value);
  // Several at once: one flush and one publish for all of them.
  void write_root_attributes(std::span<const NamedValue> values);
  // Writes `last_attributes` (the run's totals), records end_time and complete = 1 (0 when the run did
  // not finish, e.g. a stop signal ended it), and closes the file: the working file then replaces the
  // published one, so these cost no copy of the file. Nothing may be written afterwards.
  void close(bool finished = true, std::span<const NamedValue> last_attributes = {});

 private:
  RunWriter& add_run(hid_t group, int64_t ranks);
  friend class RunWriter;
  void create_file(const RunMetadata& metadata);
  void continue_file(const RunMetadata& metadata);
  // Replaces `path` with a copy of the working file (copy, then an atomic rename); nothing while held back.
  void publish();
  void require_open() const;
  // Closes every HDF5 object and the file (end of close() and of the destructor).
  void close_handles();

  std::string working_path_;
  bool held_back_ = false;  // Continue: `path` keeps its bytes until the first new row
  int publish_holds_ = 0;         // live RunWriter::PublishOnce scopes
  bool publish_pending_ = false;  // a publish asked for while held

  std::string path_;
  int64_t world_size_;
  h5::Handle file_;
  std::vector<h5::Handle> groups_;
  std::map<std::string, std::unique_ptr<RunWriter>> runs_;  // by group path
  h5::Handle study_type_;
  h5::Handle study_;
  h5::Handle split_type_;
  h5::Handle split_;
};

// Now, as ISO 8601 UTC with seconds: "2026-11-26T10:22:31Z".
std::string utc_now_iso8601();

}  // namespace sb
