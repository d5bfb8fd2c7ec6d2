// The engine's per-epoch readings (train/engines/epoch_reading.h) into each epoch's row: every reading is
// read on every rank when the epoch is measured (a counter as its growth since the last epoch's end),
// combined over the ranks as the reading says, and written into its column of the summary's row.
#pragma once
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "train/engines/epoch_reading.h"
#include "train/run/train_observer.h"

namespace sb {

class EpochReadingsObserver final : public TrainObserver {
 public:
  // readings: the same list on every rank.
  EpochReadingsObserver(Communicator& comm, std::vector<EpochReading> readings)
      : comm_(comm), readings_(std::move(readings)), last_(readings_.size(), 0.0) {}

  // The counters' totals when the run's clock starts: the first epoch's values count from there.
  void on_run_start(const RunStart&) override;
  void measure_epoch(EpochSummary& s) override;

 private:
  Communicator& comm_;
  std::vector<EpochReading> readings_;
  std::vector<double> last_;  // each reading at the last epoch's end (or the run's start)
};

}  // namespace sb
