// Each epoch's energy (summed over the ranks) and peak device memory, in use and allocated (the largest
// rank's), from the engine's readings; NaN where the engine does not measure them.
#pragma once
#include "comm/communicator.h"
#include "train/engines/engine_measurements.h"
#include "train/run/train_observer.h"

namespace sb {

class DeviceReadingsObserver final : public TrainObserver {
 public:
  DeviceReadingsObserver(Communicator& comm, EngineMeasurements& measurements) : comm_(comm), measurements_(measurements) {}

  void on_run_start(const RunStart&) override { energy_before_ = measurements_.energy_joules(); }
  void measure_epoch(EpochSummary& s) override {
    const double energy_now = measurements_.energy_joules();
    s.energy_joules = comm_.allreduce_sum(energy_now - energy_before_);
    energy_before_ = energy_now;
    s.peak_memory_bytes = comm_.allreduce_max(measurements_.peak_memory_bytes());
    s.peak_allocated_bytes = comm_.allreduce_max(measurements_.peak_allocated_bytes());
  }

 private:
  Communicator& comm_;
  EngineMeasurements& measurements_;
  double energy_before_ = 0;  // the engine's energy counter at the end of the last epoch
};

}  // namespace sb
