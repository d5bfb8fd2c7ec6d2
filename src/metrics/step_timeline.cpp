#include "metrics/step_timeline.h"

#include <algorithm>

namespace sb {

void set_bucket_starts(std::vector<BucketSpan>& buckets) {
  double previous_end = -std::numeric_limits<double>::infinity();
  for (BucketSpan& b : buckets) {
    b.start_s = std::min(std::max(b.ready_s, previous_end), b.end_s);
    previous_end = std::max(previous_end, b.end_s);
  }
}

double busy_seconds_within(double begin, double end, std::span<const BucketSpan> buckets) {
  double covered = 0;
  for (const BucketSpan& b : buckets) covered += std::max(0.0, std::min(end, b.end_s) - std::max(begin, b.start_s));
  return std::min(covered, std::max(0.0, end - begin));
}

std::array<double, kPhaseCount> phase_seconds(const StepTimeline& step) {
  const auto& e = step.ends;
  std::array<double, kPhaseCount> s{};
  s[kPhaseData] = e[kDataEnd];
  s[kPhaseForward] = e[kForwardEnd] - e[kDataEnd];
  const double backward = e[kBackwardEnd] - e[kForwardEnd];
  s[kPhaseBackwardOverlap] = busy_seconds_within(e[kForwardEnd], e[kBackwardEnd], step.buckets);
  s[kPhaseBackward] = backward - s[kPhaseBackwardOverlap];
  s[kPhaseComm] = e[kCommEnd] - e[kBackwardEnd];
  s[kPhaseOptimizer] = e[kOptimizerEnd] - e[kCommEnd];
  return s;
}

double arrival_seconds(const StepTimeline& step) {
  double arrival = step.buckets.empty() ? step.ends[kBackwardEnd] : step.buckets.front().ready_s;
  for (const BucketSpan& b : step.buckets) arrival = std::max(arrival, b.ready_s);
  return arrival;
}

std::vector<double> ready_after_backward_start(const StepTimeline& step) {
  std::vector<double> ready;
  ready.reserve(step.buckets.size());
  for (const BucketSpan& b : step.buckets) ready.push_back(b.ready_s - step.ends[kForwardEnd]);
  return ready;
}

}  // namespace sb
