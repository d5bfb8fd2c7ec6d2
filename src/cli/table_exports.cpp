#include "cli/table_exports.h"

#include "comm/root_check.h"
#include "train/reporting/results_observer.h"

namespace sb {

std::unique_ptr<TableExport> prepare_table_export(Communicator& world, const TrainConfig& config,
                                                  const std::vector<std::string>& tables) {
  const TableExportPaths paths{config.csv, config.json, !config.resume.empty()};
  if (!paths.any()) return nullptr;
  check_on_root(world, 0, [&] { check_table_exports_free(paths, tables); });
  return world.rank() == 0 ? std::make_unique<TableExport>(paths) : nullptr;
}

ExportingObserver::ExportingObserver(TableExport* out) : out_(out) {
  if (out_) out_->begin_table("epochs", export_columns(epoch_columns()));
}

void ExportingObserver::on_epoch_end(const EpochSummary& s) {
  if (!out_) return;
  const EpochRow row = to_epoch_row(s);
  out_->add_row(export_values(epoch_columns(), &row));
}

void export_run_summary(TableExport& out, const RunSummary& run) {
  out.begin_table("summary", {{"epochs_run", "epochs_run"},
                              {"total_time_s", "total_time_s"},
                              {"images", "images"},
                              {"images_per_s", "images_per_s"},
                              {"best_test_accuracy", "best_test_accuracy"},
                              {"final_test_accuracy", "final_test_accuracy"},
                              {"time_to_target_s", "time_to_target_s"},
                              {"wall_to_target_s", "wall_to_target_s"},
                              {"stop_reason", "stop_reason"}});
  out.add_row({int64_t{run.epochs_run}, run.elapsed_seconds(), run.images(), run.images_per_s(), run.best_accuracy,
               run.final_accuracy, run.time_to_target, run.wall_to_target, run.stop_reason});
}

}  // namespace sb
