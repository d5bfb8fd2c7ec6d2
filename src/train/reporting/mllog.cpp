#include "train/reporting/mllog.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/json_text.h"
#include "core/log.h"
#include "core/os_error.h"
#include "metrics/results_output_check.h"
#include "optim/optimizer_kind.h"
#include "train/run/run_summary.h"

namespace sb {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

const char* event_name(MlLog::Event event) {
  switch (event) {
    case MlLog::Event::Point: return "POINT_IN_TIME";
    case MlLog::Event::Start: return "INTERVAL_START";
    case MlLog::Event::End: return "INTERVAL_END";
  }
  return "?";
}

std::string epoch_meta(int epoch) { return "\"epoch_num\": " + std::to_string(epoch + 1); }

}  // namespace

std::string mllog_number(double v) {
  if (!std::isfinite(v)) return "null";
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return ec == std::errc() ? std::string(text, end) : std::to_string(v);
}

bool mllog_should_write(const std::string& path, bool resuming) {
  if (std::filesystem::exists(std::filesystem::symlink_status(path))) {
    if (resuming) {
      log0("--mllog %s: the log of the run before the resume is left as it is; a resumed run is logged in a new file\n",
           path.c_str());
      return false;
    }
    throw UserError("--mllog " + path + ": the file exists already, and a log is never written over; choose a new name "
                    "or move the old log away");
  }
  check_output_writable(path, "the MLPerf log (--mllog)");
  return true;
}

MlLog::MlLog(const std::string& path, const std::string& benchmark, const std::string& platform) : path_(path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    throw UserError("--mllog: cannot create " + path + ": " + std::strerror(error) + "; " +
                    (error == EEXIST ? "choose a new name" : write_error_hint(error)));
  }
  file_ = ::fdopen(fd, "w");
  if (!file_) {
    ::close(fd);
    throw UserError("--mllog: cannot open " + path + ": " + std::strerror(errno));
  }
  // scalebench's models are not MLPerf benchmarks: an open-division research run, named by its model.
  log(Event::Point, "submission_benchmark", json_quote(benchmark));
  log(Event::Point, "submission_division", "\"open\"");
  log(Event::Point, "submission_org", "\"scalebench\"");
  log(Event::Point, "submission_platform", json_quote(platform));
  log(Event::Point, "submission_status", "\"research\"");
  log(Event::Point, "cache_clear", "false");  // scalebench does not drop the system's caches
  log(Event::Start, "init_start", "null");
}

MlLog::~MlLog() {
  if (file_) std::fclose(file_);  // every line was flushed and checked as it was written
}

void MlLog::log(Event event, const std::string& key, const std::string& value_json, const std::string& metadata_members,
                std::source_location where) {
  const std::string file = std::filesystem::path(where.file_name()).filename().string();
  const std::string line = ":::MLLOG {\"namespace\": \"\", \"time_ms\": " + std::to_string(now_ms()) + ", \"event_type\": \"" +
                           event_name(event) + "\", \"key\": " + json_quote(key) + ", \"value\": " + value_json +
                           ", \"metadata\": {\"file\": " + json_quote(file) + ", \"lineno\": " + std::to_string(where.line()) +
                           (metadata_members.empty() ? "" : ", " + metadata_members) + "}}\n";
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) {
    const int error = errno;
    fatal("--mllog: writing " + path_ + " failed: " + std::strerror(error) + "; " + write_error_hint(error));
  }
}

void MlLog::run_start(const TrainConfig& config, int64_t global_batch, int64_t train_samples, int64_t eval_samples) {
  log(Event::Point, "seed", std::to_string(config.seed));
  log(Event::Point, "global_batch_size", std::to_string(global_batch));
  log(Event::Point, "gradient_accumulation_steps", "1");
  log(Event::Point, "opt_name", json_quote(optimizer_name(config.optimizer)));
  log(Event::Point, "opt_base_learning_rate", mllog_number(config.lr));
  log(Event::Point, "opt_weight_decay", mllog_number(config.weight_decay.value_or(default_weight_decay(config.optimizer))));
  if (config.optimizer == OptimizerKind::Sgd) log(Event::Point, "opt_momentum", mllog_number(config.momentum));
  if (config.optimizer == OptimizerKind::Adam || config.optimizer == OptimizerKind::AdamW) {
    log(Event::Point, "opt_adam_beta_1", mllog_number(config.beta1));
    log(Event::Point, "opt_adam_beta_2", mllog_number(config.beta2));
    log(Event::Point, "opt_adam_epsilon", mllog_number(config.eps >= 0 ? config.eps : default_eps(config.optimizer)));
  }
  log(Event::Point, "opt_learning_rate_decay_schedule", json_quote(name_of(config.scheduler)));
  log(Event::Point, "opt_learning_rate_warmup_epochs", mllog_number(config.warmup_epochs));
  log(Event::Point, "train_samples", std::to_string(train_samples));
  log(Event::Point, "eval_samples", std::to_string(eval_samples));
  log(Event::End, "init_stop", "null");
  log(Event::Start, "run_start", "null");
}

void MlLog::epoch_start(int epoch) { log(Event::Start, "epoch_start", "null", epoch_meta(epoch)); }

void MlLog::evaluation_start(int epoch) {
  log(Event::End, "epoch_stop", "null", epoch_meta(epoch));
  log(Event::Start, "eval_start", "null", epoch_meta(epoch));
}

void MlLog::evaluation_done(const EpochSummary& e) {
  log(Event::Point, "eval_accuracy", mllog_number(e.test_accuracy), epoch_meta(e.epoch));
  log(Event::End, "eval_stop", "null", epoch_meta(e.epoch));
  log(Event::Point, "tracked_stats", "{\"throughput\": " + mllog_number(e.images_per_s) + "}",
      "\"step\": " + std::to_string(e.epoch + 1));
}

void MlLog::run_stop(const std::string& status) { log(Event::End, "run_stop", "null", "\"status\": " + json_quote(status)); }

}  // namespace sb
