// Each epoch's input-pipeline work on image files (the engine's InputTotals), summed over the ranks:
// seconds the workers spent reading, decoding and augmenting, bytes read, images decoded, files skipped
// and images the GPU decoder left to the CPU, written into the epoch's input columns (EpochSummary::measured).
#pragma once
#include <optional>

#include "comm/communicator.h"
#include "data/input_counters.h"
#include "train/engines/engine_measurements.h"
#include "train/run/train_observer.h"

namespace sb {

class InputPipelineObserver final : public TrainObserver {
 public:
  InputPipelineObserver(Communicator& comm, EngineMeasurements& measurements) : comm_(comm), measurements_(measurements) {}

  void on_run_start(const RunStart&) override { before_ = measurements_.input_totals(); }
  void measure_epoch(EpochSummary& s) override;

 private:
  Communicator& comm_;
  EngineMeasurements& measurements_;
  std::optional<InputTotals> before_;  // the engine's totals at the end of the last epoch
};

}  // namespace sb
