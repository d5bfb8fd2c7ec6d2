// What a training run reports: each epoch's summary, reduced across ranks, and the run's.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "data/input_counters.h"
#include "metrics/results_schema.h"
#include "train/engines/phase_times.h"
#include "train/run/epoch_clocks.h"
#include "train/run/straggler.h"

namespace sb {

struct EpochSummary {
  int epoch = 0;  // 0-based
  double wall_max = 0, wall_mean = 0, wall_min = 0;  // training wall time of the epoch across ranks, s
  double images_per_s = 0;                          // global training samples / wall_max
  int64_t global_samples = 0;
  int64_t steps = 0;
  int64_t steps_resumed = 0;  // steps of this epoch done before the resume (the checkpoint's); 0 for a whole epoch
  double train_loss = 0, train_accuracy = 0;
  double test_loss = 0, test_accuracy = 0;
  double eval_seconds = 0;    // evaluation wall time (max over ranks)
  double elapsed_seconds = 0; // since the run started: training plus evaluation (time to accuracy)
  double learning_rate = 0;   // at the epoch's last step
  PhaseTimes phases_max;      // per phase, the largest per-rank epoch total
  PhaseTimes phases_mean;     // per phase, the mean over ranks
  EpochClocks clocks;  // the GPUs' clocks while the epoch trained, across ranks
  // The columns of the epoch's results row that observers measure and write straight into it (the
  // engine's readings, the input pipeline's work), across ranks; "not measured" where none did. The
  // row (to_epoch_row, train/reporting/results_observer.h) starts from it.
  EpochRow measured;
  // Image files: the input pipeline's work this epoch, every rank's workers summed (the input columns of
  // `measured` come from it; the step split reads it); nullopt for a data set held in memory.
  std::optional<InputTotals> input;
  // Root only: every rank's epoch wall time, and sampled per-step phase times [rank][step][phase] in ns.
  std::vector<double> rank_wall_times;
  int64_t sampled_steps = 0;
  int64_t first_sampled_step = 0;  // global step number of the first sampled step
  std::vector<int64_t> step_phase_ns;
  // Each gradient bucket's ready time after the start of backward, seconds: the median over the run's
  // steady steps so far, the slowest rank's; empty where the engine does not time its buckets.
  std::vector<double> bucket_ready_s;
  // Root only: each rank's arrival at the gradient collective over the sampled steps, and the straggler.
  EpochArrivals arrivals;
};

struct RunSummary {
  int epochs_run = 0;
  double best_accuracy = 0;
  double final_accuracy = 0;
  double time_to_target = std::numeric_limits<double>::quiet_NaN();  // s, when the target was reached
  // Its wall-clock twin: seconds from process start (core/startup_clock.h) to the end of the epoch that
  // reached the target, the slowest rank's; NaN when not reached, or reached before a resume.
  double wall_to_target = std::numeric_limits<double>::quiet_NaN();
  std::string stop_reason;  // "completed", or the early-stopping rule (train/run/early_stop.h), a signal, a divergence
  bool interrupted = false;  // a stop signal ended the run; a checkpoint was written
  bool diverged = false;     // the training loss became NaN or infinite
  std::vector<EpochSummary> epochs;

  // Totals of the epochs this command ran (after a resume: the epochs since it).
  double images() const;          // trained, over all ranks
  double train_seconds() const;   // the epochs' wall times (slowest rank), without evaluation
  double images_per_s() const { return images() / train_seconds(); }
  // Training plus evaluation since the run began, a resumed run's earlier part included.
  double elapsed_seconds() const { return epochs.empty() ? std::numeric_limits<double>::quiet_NaN() : epochs.back().elapsed_seconds; }
};

}  // namespace sb
