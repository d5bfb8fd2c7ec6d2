// --csv and --json for the commands: the export's set-up and the tables only a command knows.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "metrics/table_export.h"
#include "train/run/train_observer.h"
#include "train/train_config.h"

namespace sb {

// Collective, with the outputs' checks: rank 0 checks that the files of `tables` are free, or for a
// resumed run (--resume) writable (every rank throws the same UserError when not). Returns the export
// on rank 0, nullptr elsewhere or without --csv and --json.
std::unique_ptr<TableExport> prepare_table_export(Communicator& world, const TrainConfig& config,
                                                  const std::vector<std::string>& tables);

// The epoch table: exports each epoch's row (results-file columns).
class ExportingObserver final : public TrainObserver {
 public:
  explicit ExportingObserver(TableExport* out);
  void on_epoch_end(const EpochSummary& s) override;

 private:
  TableExport* out_;
};

// The run's summary as a one-row table "summary".
void export_run_summary(TableExport& out, const RunSummary& run);

}  // namespace sb
