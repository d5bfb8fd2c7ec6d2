#include "train/run/train_observers.h"

namespace sb {

void TrainObservers::on_run_start(const RunStart& e) {
  for (TrainObserver* o : observers_) o->on_run_start(e);
}

void TrainObservers::on_epoch_start(const EpochStart& e) {
  for (TrainObserver* o : observers_) o->on_epoch_start(e);
}

void TrainObservers::on_resume_point(const ResumePoint& e) {
  for (TrainObserver* o : observers_) o->on_resume_point(e);
}

void TrainObservers::on_step_start(const StepInfo& e) {
  for (TrainObserver* o : observers_) o->on_step_start(e);
}

void TrainObservers::on_step_end(const PhaseTimes& e) {
  for (TrainObserver* o : observers_) o->on_step_end(e);
}

void TrainObservers::on_step_times(const PhaseTimes& e) {
  for (TrainObserver* o : observers_) o->on_step_times(e);
}

void TrainObservers::on_step_progress(const StepProgress& e) {
  for (TrainObserver* o : observers_) o->on_step_progress(e);
}

void TrainObservers::on_epoch_trained(const EpochTrained& e) {
  for (TrainObserver* o : observers_) o->on_epoch_trained(e);
}

void TrainObservers::on_evaluation_start(int epoch) {
  for (TrainObserver* o : observers_) o->on_evaluation_start(epoch);
}

void TrainObservers::on_evaluation_end(int epoch) {
  for (TrainObserver* o : observers_) o->on_evaluation_end(epoch);
}

void TrainObservers::measure_epoch(EpochSummary& s) {
  for (TrainObserver* o : observers_) o->measure_epoch(s);
}

void TrainObservers::on_epoch_end(const EpochSummary& s) {
  for (TrainObserver* o : observers_) o->on_epoch_end(s);
}

void TrainObservers::on_epoch_closed(int epoch) {
  for (TrainObserver* o : observers_) o->on_epoch_closed(epoch);
}

void TrainObservers::on_run_end(const RunEnd& e) {
  for (TrainObserver* o : observers_) o->on_run_end(e);
}

}  // namespace sb
