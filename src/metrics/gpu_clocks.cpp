#include "metrics/gpu_clocks.h"

#include <algorithm>
#include <cmath>

namespace sb {

double GpuClocks::fraction_of_window(double seconds) const {
  if (!std::isfinite(seconds) || !std::isfinite(window_s) || window_s <= 0) return kNotMeasured;
  // The driver advances its counters in steps, so a window that is limited throughout can read a little
  // over its own length.
  return std::clamp(seconds / window_s, 0.0, 1.0);
}

void ClockSampleMean::add(double mhz) {
  const std::lock_guard lock(mutex_);
  sum_ += mhz;
  ++count_;
}

double ClockSampleMean::take() {
  const std::lock_guard lock(mutex_);
  const double mean = count_ > 0 ? sum_ / static_cast<double>(count_) : kNotMeasured;
  sum_ = 0;
  count_ = 0;
  return mean;
}

double CounterGrowth::take_seconds(std::optional<uint64_t> now_ns) {
  const std::optional<uint64_t> last = last_ns_;
  last_ns_ = now_ns;
  if (!last || !now_ns || *now_ns < *last) return kNotMeasured;
  constexpr double kSecondsPerNanosecond = 1e-9;
  return static_cast<double>(*now_ns - *last) * kSecondsPerNanosecond;
}

}  // namespace sb
