// `--mllog FILE`: the run as MLPerf Training's logging package writes it, one `:::MLLOG {json}` line per
// event, so that MLPerf's log tooling (and results summarisers built on it) read scalebench runs:
//   :::MLLOG {"namespace": "", "time_ms": 1764175803125, "event_type": "POINT_IN_TIME", "key": "global_batch_size",
//             "value": 256, "metadata": {"file": "trainer.cpp", "lineno": 142}}
// Keys and order follow MLPerf Training's common set (its compliance checker's common.yaml): the
// submission's description, cache_clear, init_start/init_stop around the set-up, the hyperparameters,
// train_samples and eval_samples, run_start, per epoch epoch_start/epoch_stop, eval_start, eval_accuracy,
// eval_stop and the throughput (tracked_stats), and run_stop with its status. Rank 0 writes; the file is
// new (an existing one is refused before the run) and every line is flushed as it is written.
#pragma once
#include <chrono>
#include <cstdio>
#include <source_location>
#include <string>

#include "train/train_config.h"

namespace sb {

struct EpochSummary;

// The JSON text of a value or metadata object is passed as is; these make it.
std::string mllog_number(double v);  // "null" for NaN or an infinity

class MlLog {
 public:
  // Creates `path` exclusively (UserError naming --mllog when it exists or cannot be created), then logs
  // the submission's description, cache_clear and init_start. `platform` names the system ("2xcpu").
  MlLog(const std::string& path, const std::string& benchmark, const std::string& platform);
  ~MlLog();
  MlLog(const MlLog&) = delete;
  MlLog& operator=(const MlLog&) = delete;

  // The run's hyperparameters and data sizes, then init_stop and run_start.
  void run_start(const TrainConfig& config, int64_t global_batch, int64_t train_samples, int64_t eval_samples);
  void epoch_start(int epoch);
  // The epoch's training is over: epoch_stop, eval_start.
  void evaluation_start(int epoch);
  // eval_accuracy, eval_stop and the epoch's throughput.
  void evaluation_done(const EpochSummary& epoch);
  // status: "success" (the run completed, or reached its target) or "aborted".
  void run_stop(const std::string& status);

  enum class Event { Point, Start, End };
  // One line. value_json and metadata_members are JSON text ("" for no extra metadata members).
  void log(Event event, const std::string& key, const std::string& value_json, const std::string& metadata_members = "",
           std::source_location where = std::source_location::current());

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Whether --mllog should write `path`: true when it is free and writable. A log that exists is never
// written over: UserError naming the option, except for a resumed run (`resuming`), which leaves it as
// it is, says so on stdout and returns false (MLPerf times one uninterrupted run, from run_start to
// run_stop; a resumed run cannot give one).
bool mllog_should_write(const std::string& path, bool resuming);

}  // namespace sb
