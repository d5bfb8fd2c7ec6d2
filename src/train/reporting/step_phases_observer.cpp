#include "train/reporting/step_phases_observer.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace sb {

void StepPhasesObserver::on_epoch_start(const EpochStart& e) {
  totals_ = PhaseTimes{};
  first_step_ = e.first_step;
  sampled_ = std::min<int64_t>(sample_steps_, e.steps - e.steps_resumed);
  timed_steps_ = 0;
  sampled_ns_.assign(static_cast<size_t>(sampled_ * kPhaseCount), 0);
}

void StepPhasesObserver::on_step_times(const PhaseTimes& t) {
  totals_ += t;
  if (timed_steps_ < sampled_) {
    for (int p = 0; p < kPhaseCount; ++p) {
      sampled_ns_[static_cast<size_t>(timed_steps_ * kPhaseCount + p)] = std::llround(t.seconds[p] * 1e9);
    }
  }
  ++timed_steps_;
}

void StepPhasesObserver::measure_epoch(EpochSummary& s) {
  for (int p = 0; p < kPhaseCount; ++p) {
    s.phases_max.seconds[p] = comm_.allreduce_max(totals_.seconds[p]);
    s.phases_mean.seconds[p] = comm_.allreduce_avg(totals_.seconds[p]);
  }
  s.first_sampled_step = first_step_;
  // Only steps whose times arrived on every rank are sampled: no row of zeros stands for a step.
  s.sampled_steps = comm_.allreduce_min(std::min(timed_steps_, sampled_));
  sampled_ns_.resize(static_cast<size_t>(s.sampled_steps * kPhaseCount));
  s.step_phase_ns = comm_.gather(std::span<const int64_t>(sampled_ns_), 0);
  if (comm_.allreduce_min(timed_steps_) == 0) {
    for (int p = 0; p < kPhaseCount; ++p) s.phases_max.seconds[p] = s.phases_mean.seconds[p] = NAN;
  }
}

}  // namespace sb
