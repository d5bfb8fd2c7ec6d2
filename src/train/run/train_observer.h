// The training loop's events, for what measures and reports a run without being part of its training:
// NVTX ranges, the trace, step phases, bucket ready times, GPU clocks, energy, progress lines, the
// MLPerf log, the results file (train/reporting/) and the stop checkpointer (train/checkpoint/). Each
// observer overrides the events it needs; TrainObservers (train/run/train_observers.h) forwards every
// event to those subscribed, in order. The per-step events run on the step's path: an observer keeps to
// bookkeeping there (the timed progress line alone reads the loss from the device, when a line is due).
#pragma once
#include <chrono>
#include <cstdint>

#include "train/engines/engine.h"
#include "train/run/loop_state.h"
#include "train/run/run_summary.h"
#include "train/train_config.h"

namespace sb {

using TrainClock = std::chrono::steady_clock;

struct RunStart {
  const TrainConfig& config;
  int64_t global_batch = 0;   // the per-rank batch times the ranks
  int64_t train_samples = 0;
  int64_t test_samples = 0;   // evaluated per epoch
  TrainClock::time_point start;  // the run's clock: zero of the trace
};

struct EpochStart {
  int epoch = 0;              // 0-based
  int64_t steps = 0;          // optimizer steps in the epoch
  int64_t steps_resumed = 0;  // of them, done before the resume (0 for a whole epoch)
  int64_t first_step = 0;     // the global step number of the first step run here
};

// A point between two steps that a checkpoint could resume from: the start of an epoch's steps and the
// end of each finished step.
struct ResumePoint {
  LoopState at;
  TrainClock::time_point epoch_start;  // when the epoch's training clock started
};

// After a step the run goes on from.
struct StepProgress {
  int epoch = 0;
  int64_t step = 0;       // steps of the epoch done, resumed ones included
  int64_t steps = 0;      // in the epoch
  int64_t steps_run = 0;  // of them, done since the epoch (or its resume) started here
  int64_t samples = 0;    // this rank's, since then
  double lr = 0;          // of the step
  TrainClock::time_point epoch_start;
};

// The epoch's training is over on this rank: its device work finished, its last step times handed over.
struct EpochTrained {
  int epoch = 0;
  double wall_s = 0;  // this rank's training wall time of the epoch
};

struct RunEnd {
  const RunSummary& run;
  const LoopState& at;  // where the run stopped (what a checkpoint of the stop records)
};

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;

  // After the warm-up, when the run's clock starts.
  virtual void on_run_start(const RunStart&) {}
  // Every rank together, before the epoch's training clock starts.
  virtual void on_epoch_start(const EpochStart&) {}
  // Collective: at the start of the epoch's steps and after every finished step.
  virtual void on_resume_point(const ResumePoint&) {}
  // Around the engine's step: on_step_end also follows a step that a stop signal abandoned.
  virtual void on_step_start(const StepInfo&) {}
  virtual void on_step_end(const PhaseTimes&) {}
  // The times of a finished step as they arrive (an engine timing on the device reports a step late, the
  // epoch's last one after its training); always valid.
  virtual void on_step_times(const PhaseTimes&) {}
  // After each step when the ranks agreed to go on (no stop signal).
  virtual void on_step_progress(const StepProgress&) {}
  virtual void on_epoch_trained(const EpochTrained&) {}
  // Around this rank's evaluation of its shard of the test set.
  virtual void on_evaluation_start(int /*epoch*/) {}
  virtual void on_evaluation_end(int /*epoch*/) {}
  // Collective: adds what the observer measured of the epoch to its summary, whose training and
  // evaluation fields are filled.
  virtual void measure_epoch(EpochSummary&) {}
  // The epoch's summary, complete on root (rank 0 writes it; the stop checkpointer's HDF5 writes wait).
  virtual void on_epoch_end(const EpochSummary&) {}
  // After the epoch's checkpoint and the decision to stop or go on.
  virtual void on_epoch_closed(int /*epoch*/) {}
  // The last event: completed, stopped early, diverged or interrupted by a stop signal.
  virtual void on_run_end(const RunEnd&) {}
};

}  // namespace sb
