#include "predict/rank_spread.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/median.h"

namespace sb::predict {
namespace {

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

}  // namespace

double expected_max_of_normals(int64_t n) {
  if (n < 1) throw std::invalid_argument("expected_max_of_normals: n must be at least 1, got " + std::to_string(n));
  if (n == 1) return 0;
  // A prediction asks for the same few counts at every bucket size and threshold search: computed once each.
  static std::mutex mutex;
  static std::map<int64_t, double> known;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = known.find(n); it != known.end()) return it->second;
  // E[max] = integral of (1 - F(x)^n) over x > 0 minus the integral of F(x)^n over x < 0 (F the normal
  // CDF). Each side is smooth (their sum jumps at 0), so each gets Simpson's rule of its own over [0, 12]:
  // past 12 the integrands are below 1e-30 for any n this model meets (up to millions of GPUs).
  constexpr double kEdge = 12, kStep = 1.0 / 512;
  constexpr int kIntervals = static_cast<int>(kEdge / kStep);  // even
  const double power = static_cast<double>(n);
  auto simpson = [&](auto&& f) {
    double sum = f(0.0) + f(kEdge);
    for (int i = 1; i < kIntervals; ++i) sum += (i % 2 ? 4 : 2) * f(i * kStep);
    return sum * kStep / 3;
  };
  const double above = simpson([&](double x) { return 1 - std::pow(normal_cdf(x), power); });
  const double below = simpson([&](double x) { return std::pow(normal_cdf(-x), power); });
  return known.emplace(n, above - below).first->second;
}

std::optional<double> rank_spread_of(const StepSamples& samples, size_t first_step) {
  const size_t steps = samples.step_numbers.size();
  const size_t phases = samples.phases.size();
  const auto comm = std::find(samples.phases.begin(), samples.phases.end(), "comm");
  if (samples.ranks < 2 || first_step >= steps || comm == samples.phases.end() ||
      samples.phase_ns.size() != static_cast<size_t>(samples.ranks) * steps * phases)
    return std::nullopt;
  const size_t comm_index = static_cast<size_t>(comm - samples.phases.begin());
  const size_t ranks = static_cast<size_t>(samples.ranks);
  auto compute_s = [&](size_t rank, size_t step) {
    double ns = 0;
    for (size_t p = 0; p < phases; ++p)
      if (p != comm_index) ns += static_cast<double>(samples.phase_ns[(rank * steps + step) * phases + p]);
    return ns * 1e-9;
  };
  double squares = 0, total = 0;
  std::vector<double> step_compute(ranks);  // each rank's, of one step
  for (size_t step = first_step; step < steps; ++step) {
    for (size_t r = 0; r < ranks; ++r) step_compute[r] = compute_s(r, step);
    const double mean = std::accumulate(step_compute.begin(), step_compute.end(), 0.0) / static_cast<double>(ranks);
    for (double c : step_compute) squares += (c - mean) * (c - mean);
    total += mean;
  }
  const double counted = static_cast<double>(steps - first_step);
  const double mean_compute = total / counted;
  if (!(mean_compute > 0)) return std::nullopt;
  return std::sqrt(squares / (counted * static_cast<double>(ranks - 1))) / mean_compute;
}

double measured_rank_spread(const StudyInputs& study, int64_t gpus, int64_t batch) {
  std::vector<double> spreads;
  for (const MeasuredConfig& c : study.configs)
    if (c.gpus == gpus && c.batch_size == batch && c.rank_spread) spreads.push_back(*c.rank_spread);
  return spreads.empty() ? 0.0 : median_of(spreads);
}

double slowest_rank_delay_s(double spread, double compute_s, int64_t gpus, int64_t from) {
  return spread * compute_s * (expected_max_of_normals(gpus) - expected_max_of_normals(from));
}

}  // namespace sb::predict
