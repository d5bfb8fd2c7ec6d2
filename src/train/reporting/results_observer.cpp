#include "train/reporting/results_observer.h"

#include "train/reporting/arrivals_table.h"

namespace sb {

EpochRow to_epoch_row(const EpochSummary& s) {
  EpochRow row = s.measured;
  row.epoch = s.epoch + 1;
  row.wall_time_max_s = s.wall_max;
  row.wall_time_mean_s = s.wall_mean;
  row.wall_time_min_s = s.wall_min;
  row.images_per_s = s.images_per_s;
  row.train_loss = s.train_loss;
  row.test_loss = s.test_loss;
  row.test_accuracy = s.test_accuracy;
  row.learning_rate = s.learning_rate;
  row.exposed_comm_s = s.phases_max.seconds[kPhaseComm];
  row.data_s = s.phases_max.seconds[kPhaseData];
  row.forward_s = s.phases_max.seconds[kPhaseForward];
  row.backward_s = s.phases_max.seconds[kPhaseBackward];
  row.backward_overlap_s = s.phases_max.seconds[kPhaseBackwardOverlap];
  row.comm_s = s.phases_max.seconds[kPhaseComm];
  row.optimizer_s = s.phases_max.seconds[kPhaseOptimizer];
  row.steps_resumed = s.steps_resumed;
  row.sm_clock_min_mhz = s.clocks.sm_clock_min_mhz;
  row.sm_clock_max_mhz = s.clocks.sm_clock_max_mhz;
  row.temperature_min_c = s.clocks.temperature_min_c;
  row.temperature_max_c = s.clocks.temperature_max_c;
  row.power_limited_fraction = s.clocks.power_limited_fraction;
  row.thermal_limited_fraction = s.clocks.thermal_limited_fraction;
  return row;
}

void ResultsObserver::on_epoch_end(const EpochSummary& s) {
  if (writer_) {
    const RunWriter::PublishOnce publish_once(*writer_);
    writer_->append_epoch(to_epoch_row(s), s.rank_wall_times);
    if (s.sampled_steps > 0) {
      std::vector<int64_t> numbers(static_cast<size_t>(s.sampled_steps));
      for (int64_t i = 0; i < s.sampled_steps; ++i) numbers[static_cast<size_t>(i)] = s.first_sampled_step + i;
      writer_->append_steps(numbers, s.step_phase_ns);
    }
    writer_->write_bucket_ready(s.bucket_ready_s);
    write_arrivals(*writer_, s);
  }
}

}  // namespace sb
