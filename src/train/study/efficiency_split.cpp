#include "train/study/efficiency_split.h"

#include <algorithm>

#include "core/median.h"
#include "metrics/step_phases.h"

namespace sb {
namespace {

// Per-rank sums over the sampled steps, then their means.
struct RankMeans {
  double input = 0, compute = 0, optimizer = 0, comm = 0, collectives = 0;
  int64_t steps = 0, comm_steps = 0;
};

double seconds(int64_t ns) { return static_cast<double>(ns) * 1e-9; }

// Calls add(rank, phases) for each rank's phases ([kPhaseCount] ns) at each of the epochs' /steps samples.
template <class Add>
void for_each_phase_step(std::span<const SampledEpoch> epochs, size_t ranks, const Add& add) {
  for (const SampledEpoch& e : epochs) {
    for (size_t r = 0; r < ranks; ++r) {
      for (int64_t s = 0; s < e.phase_steps; ++s) {
        const size_t at = (r * static_cast<size_t>(e.phase_steps) + static_cast<size_t>(s)) * kPhaseCount;
        if (at + kPhaseCount <= e.phase_ns.size()) add(r, &e.phase_ns[at]);
      }
    }
  }
}

// Each rank's comm phase over the epochs' /steps samples.
void add_comm(std::span<const SampledEpoch> epochs, std::vector<RankMeans>& ranks) {
  for_each_phase_step(epochs, ranks.size(), [&](size_t r, const int64_t* v) {
    ranks[r].comm += seconds(v[kPhaseComm]);
    ++ranks[r].comm_steps;
  });
}

// The rank at the lower median of `key` (one value per rank), with its mean step.
StepParts median_rank_means(const std::vector<RankMeans>& ranks, const std::vector<double>& key) {
  StepParts p;
  p.rank = static_cast<int>(lower_median_index(key));  // the straggler rule's median rank
  const RankMeans& m = ranks[static_cast<size_t>(p.rank)];
  const double steps = static_cast<double>(m.steps);
  p.steps = m.steps;
  p.input_s = m.input / steps;
  p.compute_s = m.compute / steps;
  p.optimizer_s = m.optimizer / steps;
  return p;
}

// The median rank's step from the arrivals, with its skew wait per step.
StepParts from_arrivals(std::span<const SampledEpoch> epochs, std::vector<RankMeans>& ranks) {
  const size_t n = ranks.size();
  for (const SampledEpoch& e : epochs) {
    const size_t steps = e.arrivals.size() / n;
    for (size_t r = 0; r < n; ++r) {
      for (size_t s = 0; s < steps; ++s) {
        const StepArrival& a = e.arrivals[r * steps + s];
        ranks[r].input += a.input_s;
        ranks[r].compute += a.arrival_s - a.input_s;
        ranks[r].optimizer += a.optimizer_s;
        ranks[r].collectives += a.collectives_s;
        ++ranks[r].steps;
      }
    }
  }
  std::vector<double> ready;
  for (const RankMeans& m : ranks) ready.push_back(m.input + m.compute + m.optimizer);
  StepParts p = median_rank_means(ranks, ready);
  double skew_input = 0, skew_compute = 0, skew_optimizer = 0;
  std::vector<int64_t> times_last(n, 0);  // steps at which each rank arrived after the median rank, last
  for (const SampledEpoch& e : epochs) {
    const size_t steps = e.arrivals.size() / n;
    for (size_t s = 0; s < steps; ++s) {
      const StepArrival& own = e.arrivals[static_cast<size_t>(p.rank) * steps + s];
      size_t last = 0, slowest_update = 0;  // the last to arrive, the longest optimizer
      for (size_t r = 1; r < n; ++r) {
        if (e.arrivals[r * steps + s].arrival_s > e.arrivals[last * steps + s].arrival_s) last = r;
        if (e.arrivals[r * steps + s].optimizer_s > e.arrivals[slowest_update * steps + s].optimizer_s) slowest_update = r;
      }
      if (last != static_cast<size_t>(p.rank)) ++times_last[last];
      const StepArrival& late = e.arrivals[last * steps + s];
      skew_input += late.input_s - own.input_s;
      skew_compute += (late.arrival_s - late.input_s) - (own.arrival_s - own.input_s);
      skew_optimizer += e.arrivals[slowest_update * steps + s].optimizer_s - own.optimizer_s;
    }
  }
  const double steps = static_cast<double>(p.steps);
  p.collectives_s = ranks[static_cast<size_t>(p.rank)].collectives / steps;
  p.skew_input_s = skew_input / steps;
  p.skew_compute_s = skew_compute / steps;
  p.skew_optimizer_s = skew_optimizer / steps;
  p.skew_s = p.skew_input_s + p.skew_compute_s + p.skew_optimizer_s;
  const auto most = std::max_element(times_last.begin(), times_last.end());  // the first of equals
  if (*most > 0) p.late_rank = static_cast<int>(most - times_last.begin());
  return p;
}

// The median rank's step from its phases alone: the skew wait stays inside comm.
StepParts from_phases(std::span<const SampledEpoch> epochs, std::vector<RankMeans>& ranks) {
  for_each_phase_step(epochs, ranks.size(), [&](size_t r, const int64_t* v) {
    ranks[r].input += seconds(v[kPhaseData]);
    ranks[r].compute += seconds(v[kPhaseForward] + v[kPhaseBackward] + v[kPhaseBackwardOverlap]);
    ranks[r].optimizer += seconds(v[kPhaseOptimizer]);
    ++ranks[r].steps;
  });
  std::vector<double> step;
  for (const RankMeans& m : ranks) step.push_back(m.input + m.compute + m.optimizer + m.comm);
  return median_rank_means(ranks, step);
}

}  // namespace

StepParts median_rank_step(std::span<const SampledEpoch> epochs, int ranks) {
  if (ranks <= 0) return {};
  const size_t n = static_cast<size_t>(ranks);
  bool arrivals = false, phases = false, every_arrival = true;
  for (const SampledEpoch& e : epochs) {
    arrivals = arrivals || !e.arrivals.empty();
    phases = phases || e.phase_steps > 0;
    every_arrival = every_arrival && (e.phase_steps == 0 || !e.arrivals.empty()) && e.arrivals.size() % n == 0;
  }
  std::vector<RankMeans> means(n);
  add_comm(epochs, means);
  StepParts p;
  if (arrivals && every_arrival) p = from_arrivals(epochs, means);
  else if (phases) p = from_phases(epochs, means);
  else return {};
  const RankMeans& m = means[static_cast<size_t>(p.rank)];
  if (m.comm_steps > 0) p.comm_s = m.comm / static_cast<double>(m.comm_steps);
  p.exposed_comm_s = std::isfinite(p.skew_s) ? p.comm_s + p.collectives_s - p.skew_s : p.comm_s;
  return p;
}

EfficiencySplit split_efficiency(double efficiency, double step_s, double work_ratio, const StepParts& here,
                                 const StepParts& baseline) {
  EfficiencySplit s;
  s.efficiency_loss = 1 - efficiency;
  s.median_rank = here.rank;
  s.steps = here.steps;
  if (!(std::isfinite(step_s) && step_s > 0 && std::isfinite(efficiency))) return s;
  s.step_s = step_s;
  s.ideal_step_s = efficiency * step_s;
  // What a part costs here beyond the baseline's, scaled to this count's work per GPU, per step here.
  const auto part = [&](double at_count, double at_baseline) { return (at_count - work_ratio * at_baseline) / step_s; };
  s.exposed_comm = part(here.exposed_comm_s, baseline.exposed_comm_s);
  s.skew_input = part(here.skew_input_s, baseline.skew_input_s);
  s.skew_compute = part(here.skew_compute_s, baseline.skew_compute_s);
  s.skew_optimizer = part(here.skew_optimizer_s, baseline.skew_optimizer_s);
  s.skew = s.skew_input + s.skew_compute + s.skew_optimizer;
  s.input = part(here.input_s, baseline.input_s);
  s.compute = part(here.compute_s + here.optimizer_s, baseline.compute_s + baseline.optimizer_s);
  const double skew = std::isfinite(s.skew) ? s.skew : 0;  // not measured: inside exposed_comm
  s.unexplained = s.efficiency_loss - (s.exposed_comm + skew + s.input + s.compute);
  return s;
}

}  // namespace sb
