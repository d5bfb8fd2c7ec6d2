// Each rank's arrival at the gradient collective over an epoch's sampled steps (the first --sample-steps,
// as /steps), with the input wait and compute it is made of and the optimizer after it, gathered to root
// once per epoch into the summary's arrivals and their straggler verdict (train/run/straggler.h). Per
// step it only keeps four numbers; the one collective is at the epoch's end.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "train/run/train_observer.h"

namespace sb {

class ArrivalsObserver final : public TrainObserver {
 public:
  ArrivalsObserver(Communicator& comm, int64_t sample_steps) : comm_(comm), sample_steps_(sample_steps) {}

  void on_epoch_start(const EpochStart& e) override;
  void on_step_start(const StepInfo&) override;
  void on_step_end(const PhaseTimes& t) override;
  void on_step_times(const PhaseTimes& t) override;
  void on_step_progress(const StepProgress&) override;
  void measure_epoch(EpochSummary& s) override;

 private:
  // Root: every rank's host name, gathered at the first epoch's end.
  void gather_hosts();

  Communicator& comm_;
  int64_t sample_steps_;
  int64_t sampled_ = 0;      // steps of the epoch to sample
  int64_t timed_steps_ = 0;  // steps whose times have arrived
  std::vector<int64_t> sampled_ns_;  // [step][arrival, input, compute, optimizer, collectives]; -1: not measured
  // The step under way: when it ended on this rank, and whether its check was kept (its stop check then
  // adds to its collectives).
  TrainClock::time_point step_end_;
  bool step_kept_ = false;
  std::vector<std::string> hosts_;
  bool hosts_gathered_ = false;
};

}  // namespace sb
