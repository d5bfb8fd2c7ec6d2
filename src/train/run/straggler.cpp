#include "train/run/straggler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/median.h"

namespace sb {
namespace {

// The median absolute deviation of a series from its median: its spread, robust to a few outliers.
double median_deviation(const std::vector<double>& values) {
  const double centre = median_of(values);
  std::vector<double> deviations;
  for (double v : values) deviations.push_back(std::fabs(v - centre));
  return median_of(deviations);
}

std::vector<RankArrivals> rank_means(std::span<const StepArrival> samples, int ranks, int64_t steps,
                                     std::span<const std::string> hosts) {
  std::vector<RankArrivals> out(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    RankArrivals& a = out[static_cast<size_t>(r)];
    a.rank = r;
    a.host = static_cast<size_t>(r) < hosts.size() ? hosts[static_cast<size_t>(r)] : "";
    a.steps = steps;
    for (int64_t s = 0; s < steps; ++s) {
      const StepArrival& x = samples[static_cast<size_t>(r * steps + s)];
      a.arrival_s += x.arrival_s / static_cast<double>(steps);
      a.input_s += x.input_s / static_cast<double>(steps);
      a.compute_s += x.compute_s / static_cast<double>(steps);
      a.optimizer_s += x.optimizer_s / static_cast<double>(steps);
    }
  }
  return out;
}

// Counts each rank's last arrivals into `ranks` and returns each step's median arrival.
std::vector<double> count_last_arrivals(std::span<const StepArrival> samples, int64_t steps, std::vector<RankArrivals>& ranks) {
  std::vector<double> medians;
  for (int64_t s = 0; s < steps; ++s) {
    std::vector<double> at_step;
    for (size_t r = 0; r < ranks.size(); ++r) at_step.push_back(samples[r * static_cast<size_t>(steps) + static_cast<size_t>(s)].arrival_s);
    const auto last = std::max_element(at_step.begin(), at_step.end()) - at_step.begin();
    ++ranks[static_cast<size_t>(last)].steps_last;
    medians.push_back(lower_median(at_step));
  }
  return medians;
}

StragglerVerdict judge(std::span<const StepArrival> samples, int64_t steps, const std::vector<RankArrivals>& ranks,
                       const std::vector<double>& medians) {
  StragglerVerdict v;
  const auto most = std::max_element(ranks.begin(), ranks.end(),
                                     [](const RankArrivals& a, const RankArrivals& b) { return a.steps_last < b.steps_last; });
  v.candidate = most->rank;
  v.steps = steps;
  v.last_share = static_cast<double>(most->steps_last) / static_cast<double>(steps);
  std::vector<double> deviations, computes, inputs;
  for (const RankArrivals& a : ranks) {
    std::vector<double> own;
    for (int64_t s = 0; s < steps; ++s) own.push_back(samples[static_cast<size_t>(a.rank * steps + s)].arrival_s);
    deviations.push_back(median_deviation(own));
    computes.push_back(a.compute_s);
    inputs.push_back(a.input_s);
  }
  for (int64_t s = 0; s < steps; ++s)
    v.excess_s += (samples[static_cast<size_t>(v.candidate * steps + s)].arrival_s - medians[static_cast<size_t>(s)]) / static_cast<double>(steps);
  v.jitter_s = median_of(deviations);
  v.threshold_s = std::max(kStragglerMinShareOfArrival * median_of(medians), kStragglerJitterFactor * v.jitter_s);
  v.compute_s = most->compute_s;
  v.median_compute_s = lower_median(computes);
  v.input_s = most->input_s;
  v.median_input_s = lower_median(inputs);
  if (v.last_share > kStragglerMinLastShare && v.excess_s > v.threshold_s) {
    v.rank = v.candidate;
    const bool compute = v.compute_s - v.median_compute_s >= v.input_s - v.median_input_s;
    v.cause = compute ? StragglerCause::compute : StragglerCause::input;
  }
  return v;
}

std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", seconds * 1e3);
  return text;
}

}  // namespace

EpochArrivals summarize_arrivals(std::span<const StepArrival> samples, int ranks, std::span<const std::string> hosts) {
  EpochArrivals out;
  if (ranks <= 0 || samples.empty()) return out;
  const auto steps = static_cast<int64_t>(samples.size()) / ranks;
  out.ranks = rank_means(samples, ranks, steps, hosts);
  out.samples.assign(samples.begin(), samples.end());
  const std::vector<double> medians = count_last_arrivals(samples, steps, out.ranks);
  if (ranks >= 2 && steps >= kStragglerMinSteps) out.straggler = judge(samples, steps, out.ranks, medians);
  return out;
}

const char* straggler_cause_name(StragglerCause cause) {
  switch (cause) {
    case StragglerCause::compute: return "compute";
    case StragglerCause::input: return "input";
    case StragglerCause::none: break;
  }
  return "none";
}

std::string straggler_line(const EpochArrivals& arrivals, int epoch) {
  const StragglerVerdict& v = arrivals.straggler;
  if (!arrivals.measured()) return "straggler: not measured (the engine does not time its arrival at the gradient all-reduce, or no step was sampled: --sample-steps)";
  if (arrivals.ranks.size() < 2) return "straggler: none (one rank)";
  if (v.candidate < 0) return "straggler: not judged (fewer than " + std::to_string(kStragglerMinSteps) + " sampled steps)";
  const std::string steps = "of epoch " + std::to_string(epoch + 1) + "'s " + std::to_string(v.steps) + " sampled steps";
  const int share = static_cast<int>(std::lround(v.last_share * 100));
  if (v.rank < 0) {
    return "straggler: none stands out (rank " + std::to_string(v.candidate) + " arrived last in " + std::to_string(share) + "% " +
           steps + ", " + milliseconds(v.excess_s) + " after the median rank, within the " + milliseconds(v.threshold_s) +
           " a straggler must exceed)";
  }
  const RankArrivals& r = arrivals.ranks[static_cast<size_t>(v.rank)];
  return "straggler: rank " + std::to_string(v.rank) + " (host " + r.host + ") arrived last in " + std::to_string(share) + "% " +
         steps + ", " + milliseconds(v.excess_s) + " after the median rank; its compute " + milliseconds(v.compute_s) + " vs " +
         milliseconds(v.median_compute_s) + " median, input wait " + milliseconds(v.input_s) + " vs " +
         milliseconds(v.median_input_s) + " (" + straggler_cause_name(v.cause) + " is the cause)";
}

}  // namespace sb
