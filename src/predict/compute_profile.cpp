#include "predict/compute_profile.h"

#include <algorithm>
#include <stdexcept>

namespace sb::predict {

ComputeProfile::ComputeProfile(std::vector<ComputePoint> points) : points_(std::move(points)) {
  if (points_.empty()) throw std::invalid_argument("no 1-GPU compute point");
  std::sort(points_.begin(), points_.end(), [](const ComputePoint& a, const ComputePoint& b) { return a.batch < b.batch; });
  for (size_t i = 0; i < points_.size(); ++i) {
    if (points_[i].batch < 1) throw std::invalid_argument("a 1-GPU compute point needs a batch of at least 1");
    if (i && points_[i].batch == points_[i - 1].batch)
      throw std::invalid_argument("two 1-GPU compute points of batch " + std::to_string(points_[i].batch));
  }
}

std::optional<StepCompute> ComputeProfile::at(double batch) const {
  constexpr double kSlack = 1e-9;  // a batch computed as B/N that is a measured one up to rounding
  if (batch < static_cast<double>(smallest_batch()) * (1 - kSlack) || batch > static_cast<double>(largest_batch()) * (1 + kSlack))
    return std::nullopt;
  const auto upper = std::lower_bound(points_.begin(), points_.end(), batch,
                                      [](const ComputePoint& p, double b) { return static_cast<double>(p.batch) < b * (1 - kSlack); });
  const ComputePoint& hi = upper == points_.end() ? points_.back() : *upper;
  const ComputePoint& lo = upper == points_.begin() || upper == points_.end() ? hi : *(upper - 1);
  const double b_lo = static_cast<double>(lo.batch), b_hi = static_cast<double>(hi.batch);
  const double t = hi.batch == lo.batch ? 0.0 : (batch - b_lo) / (b_hi - b_lo);
  // Per sample, linear in the batch; then back to the step.
  const auto part = [&](double StepCompute::*member) {
    const double per_sample = (1 - t) * (lo.compute.*member) / b_lo + t * (hi.compute.*member) / b_hi;
    return per_sample * batch;
  };
  return StepCompute{part(&StepCompute::before_backward_s), part(&StepCompute::backward_s), part(&StepCompute::optimizer_s)};
}

}  // namespace sb::predict
