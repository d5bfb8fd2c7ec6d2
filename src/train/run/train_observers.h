// Several observers as one: each event goes to every subscribed observer, in the order subscribed.
#pragma once
#include <initializer_list>
#include <vector>

#include "train/run/train_observer.h"

namespace sb {

class TrainObservers : public TrainObserver {
 public:
  TrainObservers() = default;
  TrainObservers(std::initializer_list<TrainObserver*> observers) : observers_(observers) {}
  // The observer must outlive this one; it hears each event after those subscribed before it.
  void subscribe(TrainObserver& observer) { observers_.push_back(&observer); }

  void on_run_start(const RunStart& e) override;
  void on_epoch_start(const EpochStart& e) override;
  void on_resume_point(const ResumePoint& e) override;
  void on_step_start(const StepInfo& e) override;
  void on_step_end(const PhaseTimes& e) override;
  void on_step_times(const PhaseTimes& e) override;
  void on_step_progress(const StepProgress& e) override;
  void on_epoch_trained(const EpochTrained& e) override;
  void on_evaluation_start(int epoch) override;
  void on_evaluation_end(int epoch) override;
  void measure_epoch(EpochSummary& s) override;
  void on_epoch_end(const EpochSummary& s) override;
  void on_epoch_closed(int epoch) override;
  void on_run_end(const RunEnd& e) override;

 private:
  std::vector<TrainObserver*> observers_;
};

}  // namespace sb
