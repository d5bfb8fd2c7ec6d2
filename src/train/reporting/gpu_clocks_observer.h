// Each epoch's GPU clocks (train/run/epoch_clocks.h): a window of the engine's clock readings opens
// when the epoch's training starts and closes after its last step, so that evaluation and the results
// file stay out of it; reduced over the ranks into the epoch's summary.
#pragma once
#include <vector>

#include "comm/communicator.h"
#include "train/engines/engine_measurements.h"
#include "train/run/train_observer.h"

namespace sb {

class GpuClocksObserver final : public TrainObserver {
 public:
  GpuClocksObserver(Communicator& comm, EngineMeasurements& measurements) : comm_(comm), measurements_(measurements) {}

  void on_epoch_start(const EpochStart&) override { measurements_.take_gpu_clocks(); }
  void on_epoch_trained(const EpochTrained&) override { trained_ = measurements_.take_gpu_clocks(); }
  void measure_epoch(EpochSummary& s) override;

 private:
  Communicator& comm_;
  EngineMeasurements& measurements_;
  std::vector<GpuClocks> trained_;  // this rank's GPUs' windows of the epoch's training
};

}  // namespace sb
