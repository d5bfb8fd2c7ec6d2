#include "train/reporting/arrivals_observer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>

#include "comm/string_collectives.h"
#include "core/host_name.h"

namespace sb {
namespace {

constexpr size_t kValues = 5;  // arrival, input, compute, optimizer, collectives

int64_t nanoseconds(double seconds) { return std::isfinite(seconds) ? std::llround(seconds * 1e9) : -1; }

// Root: the steps at which every rank measured its arrival, as [rank][step] samples.
std::vector<StepArrival> complete_steps(const std::vector<int64_t>& all, int ranks, int64_t sampled) {
  std::vector<int64_t> kept;
  for (int64_t s = 0; s < sampled; ++s) {
    bool everywhere = true;
    for (int r = 0; r < ranks; ++r) everywhere = everywhere && all[static_cast<size_t>((r * sampled + s)) * kValues] >= 0;
    if (everywhere) kept.push_back(s);
  }
  std::vector<StepArrival> out;
  for (int r = 0; r < ranks; ++r) {
    for (int64_t s : kept) {
      const int64_t* v = &all[static_cast<size_t>(r * sampled + s) * kValues];
      out.push_back(StepArrival{v[0] * 1e-9, v[1] * 1e-9, v[2] * 1e-9, v[3] * 1e-9, std::max<int64_t>(v[4], 0) * 1e-9});
    }
  }
  return out;
}

}  // namespace

void ArrivalsObserver::on_epoch_start(const EpochStart& e) {
  sampled_ = std::min<int64_t>(sample_steps_, e.steps - e.steps_resumed);
  timed_steps_ = 0;
  sampled_ns_.assign(static_cast<size_t>(sampled_) * kValues, -1);
}

void ArrivalsObserver::on_step_start(const StepInfo&) { step_kept_ = false; }

// The engine's time in the check before the gradient all-reduce (PhaseTimes::check_s), where it times
// it: an engine that times on the device hands an earlier step's times back here and leaves it NaN.
void ArrivalsObserver::on_step_end(const PhaseTimes& t) {
  step_end_ = TrainClock::now();
  if (timed_steps_ >= sampled_ || !std::isfinite(t.arrival_s) || t.abandoned || !std::isfinite(t.check_s)) return;
  sampled_ns_[static_cast<size_t>(timed_steps_) * kValues + 4] = nanoseconds(t.check_s);
  step_kept_ = true;
}

// After the loop's stop check (a collective every step): its time joins the step's collectives.
void ArrivalsObserver::on_step_progress(const StepProgress&) {
  if (!step_kept_ || timed_steps_ < 1) return;
  const double stop_s = std::chrono::duration<double>(TrainClock::now() - step_end_).count();
  sampled_ns_[static_cast<size_t>(timed_steps_ - 1) * kValues + 4] += nanoseconds(stop_s);
  step_kept_ = false;
}

void ArrivalsObserver::on_step_times(const PhaseTimes& t) {
  if (timed_steps_ < sampled_ && std::isfinite(t.arrival_s)) {
    int64_t* v = &sampled_ns_[static_cast<size_t>(timed_steps_) * kValues];
    v[0] = nanoseconds(t.arrival_s);
    v[1] = nanoseconds(t.seconds[kPhaseData]);
    v[2] = nanoseconds(t.seconds[kPhaseForward] + t.seconds[kPhaseBackward] + t.seconds[kPhaseBackwardOverlap]);
    v[3] = nanoseconds(t.seconds[kPhaseOptimizer]);
  }
  ++timed_steps_;
}

void ArrivalsObserver::gather_hosts() {
  hosts_ = allgather_strings(comm_, this_host_name());
  hosts_gathered_ = true;
}

void ArrivalsObserver::measure_epoch(EpochSummary& s) {
  if (!hosts_gathered_) gather_hosts();
  // Every rank samples the same count of steps (the epoch's); a step not timed on a rank is left out.
  const std::vector<int64_t> all = comm_.gather(std::span<const int64_t>(sampled_ns_), 0);
  if (comm_.rank() != 0) return;
  const std::vector<StepArrival> samples = complete_steps(all, comm_.size(), sampled_);
  s.arrivals = summarize_arrivals(samples, comm_.size(), hosts_);
}

}  // namespace sb
