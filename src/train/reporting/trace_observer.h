// --trace DIR: each rank's Chrome trace (metrics/chrome_trace.h, metrics/step_trace.h) of the run: every
// timed step's phases, its buckets' all-reduces, and each epoch's training and evaluation.
#pragma once
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "metrics/chrome_trace.h"
#include "train/run/train_observer.h"

namespace sb {

class TraceObserver final : public TrainObserver {
 public:
  // Collective: each rank opens its own trace file in `directory`, perhaps on node-local scratch that one
  // node lacks, so the ranks agree first. nullptr for no --trace.
  static std::unique_ptr<TraceObserver> open(const std::string& directory, Communicator& comm);

  void on_run_start(const RunStart& e) override;
  void on_resume_point(const ResumePoint& e) override;
  void on_step_times(const PhaseTimes& t) override;
  void on_epoch_trained(const EpochTrained& e) override { epoch_wall_s_ = e.wall_s; }
  void on_epoch_end(const EpochSummary& s) override;

 private:
  explicit TraceObserver(std::unique_ptr<ChromeTrace> trace) : trace_(std::move(trace)) {}

  std::unique_ptr<ChromeTrace> trace_;
  TrainClock::time_point run_start_;
  double run_start_s_ = 0;     // the same, in the device timelines' seconds
  double epoch_start_us_ = 0;  // since the run's start
  double epoch_wall_s_ = 0;
  // Device-timed steps are placed by their timeline; host-timed phases are laid end to end from a cursor.
  double cursor_us_ = 0;
};

}  // namespace sb
