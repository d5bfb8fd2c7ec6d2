#include "predict/ring_model.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace sb::predict {

double ring_allreduce_seconds(const RingLevel& level, int64_t ranks, double bytes) {
  if (ranks <= 1) return 0;
  const double n = static_cast<double>(ranks);
  return 2 * (n - 1) * level.alpha_s + 2 * (n - 1) / n * bytes / level.beta_bytes_per_s;
}

RingFit fit_ring(const std::vector<TimedSize>& samples, int64_t ranks) {
  if (ranks < 2) throw std::invalid_argument("an all-reduce on one rank exchanges nothing; the fit needs at least 2 ranks");
  std::vector<TimedSize> used;
  std::set<double> sizes;
  for (const TimedSize& s : samples) {
    if (s.bytes > 0 && s.seconds > 0 && std::isfinite(s.seconds)) {
      used.push_back(s);
      sizes.insert(s.bytes);
    }
  }
  if (sizes.size() < 2) throw std::invalid_argument("the fit needs timed all-reduces of at least two sizes");
  // t = a + b*S with weights 1/t^2 (relative error): minimise sum ((a + b*S - t) / t)^2.
  double w = 0, ws = 0, wss = 0, wt = 0, wst = 0;
  for (const TimedSize& s : used) {
    const double weight = 1.0 / (s.seconds * s.seconds);
    w += weight;
    ws += weight * s.bytes;
    wss += weight * s.bytes * s.bytes;
    wt += weight * s.seconds;
    wst += weight * s.bytes * s.seconds;
  }
  const double det = w * wss - ws * ws;
  double a = (wss * wt - ws * wst) / det;
  double b = (w * wst - ws * wt) / det;
  if (a < 0) {  // through the origin: minimise sum ((b*S - t) / t)^2
    a = 0;
    b = wst / wss;
  }
  if (!(b > 0)) throw std::invalid_argument("the measured times do not grow with the size, so no bandwidth can be fitted");
  const double n = static_cast<double>(ranks);
  RingFit fit;
  fit.level.alpha_s = a / (2 * (n - 1));
  fit.level.beta_bytes_per_s = 2 * (n - 1) / n / b;
  for (const TimedSize& s : used) {
    const double model = ring_allreduce_seconds(fit.level, ranks, s.bytes);
    fit.worst_relative_error = std::max(fit.worst_relative_error, std::abs(model - s.seconds) / s.seconds);
  }
  return fit;
}

}  // namespace sb::predict
