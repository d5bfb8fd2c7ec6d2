// Each epoch's step phases (metrics/step_phases.h): the phase totals of its timed steps, reduced over the
// ranks (the slowest rank's and the mean), and the per-step phase times of its first --sample-steps steps,
// gathered to root for the results file's /steps table.
#pragma once
#include <cstdint>
#include <vector>

#include "comm/communicator.h"
#include "train/run/train_observer.h"

namespace sb {

class StepPhasesObserver final : public TrainObserver {
 public:
  StepPhasesObserver(Communicator& comm, int64_t sample_steps) : comm_(comm), sample_steps_(sample_steps) {}

  void on_epoch_start(const EpochStart& e) override;
  void on_step_times(const PhaseTimes& t) override;
  void measure_epoch(EpochSummary& s) override;

 private:
  Communicator& comm_;
  int64_t sample_steps_;
  PhaseTimes totals_;
  int64_t first_step_ = 0;   // global step number of the epoch's first sampled step
  int64_t sampled_ = 0;      // steps of the epoch to sample
  int64_t timed_steps_ = 0;  // steps whose phase times have arrived (they may lag the step itself)
  std::vector<int64_t> sampled_ns_;  // [step][phase]
};

}  // namespace sb
