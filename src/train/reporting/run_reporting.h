// Everything that measures and reports a training run, subscribed to its loop as one observer. They hear
// each event in this order: NVTX ranges, the first step's start-up time, step phases, the ranks' arrivals
// at the gradient collective, bucket ready times, GPU clocks, energy and memory, the trace, the printed lines, the caller's results, the MLPerf log; so an
// epoch's summary is complete before anything reports it, and its line is printed before it is written.
#pragma once
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "train/engines/engine.h"
#include "train/reporting/mllog.h"
#include "train/run/train_observers.h"

namespace sb {

class RunReporting final : public TrainObservers {
 public:
  // Collective (the ranks agree on opening their trace files). `results` (the results file, on every rank
  // or none) and `mllog` (rank 0's) may be nullptr.
  RunReporting(const TrainConfig& config, Communicator& comm, Engine& engine, TrainObserver* results, MlLog* mllog);

 private:
  template <typename Observer>
  void own(std::unique_ptr<Observer> observer);

  std::vector<std::unique_ptr<TrainObserver>> owned_;
};

}  // namespace sb
