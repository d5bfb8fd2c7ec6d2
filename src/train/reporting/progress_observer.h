// What rank 0 prints while the run trains: a line every --log-interval steps, the timed progress line of
// --log-seconds (train/reporting/progress_line.h), and each epoch's line with its time, losses, accuracy
// and rate.
#pragma once
#include "train/engines/engine.h"
#include "train/reporting/progress_line.h"
#include "train/run/train_observer.h"

namespace sb {

class ProgressObserver final : public TrainObserver {
 public:
  // Progress lines go out on rank 0 only; the engine gives the loss so far.
  ProgressObserver(const TrainConfig& config, Engine& engine, int rank, int world);

  void on_epoch_start(const EpochStart&) override { schedule_.restart(); }
  void on_step_progress(const StepProgress& p) override;
  void on_epoch_end(const EpochSummary& s) override;

 private:
  Engine& engine_;
  int epochs_;
  int log_interval_;
  int world_;
  const char* rank_unit_;
  ProgressSchedule schedule_;
  double last_eval_seconds_ = 0;
};

}  // namespace sb
