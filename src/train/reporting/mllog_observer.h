// --mllog FILE: the run's events in the MLPerf log (train/reporting/mllog.h), on rank 0.
#pragma once
#include "train/reporting/mllog.h"
#include "train/run/train_observer.h"

namespace sb {

class MllogObserver final : public TrainObserver {
 public:
  MllogObserver(MlLog& log, double target_accuracy) : log_(log), target_accuracy_(target_accuracy) {}

  void on_run_start(const RunStart& e) override;
  void on_epoch_start(const EpochStart& e) override { log_.epoch_start(e.epoch); }
  void on_epoch_trained(const EpochTrained& e) override { log_.evaluation_start(e.epoch); }
  void on_epoch_end(const EpochSummary& s) override { log_.evaluation_done(s); }
  void on_run_end(const RunEnd& e) override;

 private:
  MlLog& log_;
  double target_accuracy_;
};

}  // namespace sb
