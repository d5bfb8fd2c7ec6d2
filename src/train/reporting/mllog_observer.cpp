#include "train/reporting/mllog_observer.h"

#include <cmath>

namespace sb {
namespace {

// MLPerf's run_stop status: "success" when the run reached its target, or ran every epoch without one.
const char* mllog_status(const RunSummary& run, double target_accuracy) {
  if (run.interrupted || run.diverged) return "aborted";
  if (target_accuracy > 0) return std::isfinite(run.time_to_target) ? "success" : "aborted";
  return run.stop_reason == "completed" ? "success" : "aborted";
}

}  // namespace

void MllogObserver::on_run_start(const RunStart& e) {
  log_.run_start(e.config, e.global_batch, e.train_samples, e.test_samples);
}

void MllogObserver::on_run_end(const RunEnd& e) { log_.run_stop(mllog_status(e.run, target_accuracy_)); }

}  // namespace sb
