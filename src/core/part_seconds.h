// The seconds of each part of a stretch of the process's life (its start-up, its shutdown), added up
// where the parts are timed, on any thread; NaN for a part never timed.
#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <mutex>

namespace sb {

template <size_t Parts>
class PartSeconds {
 public:
  PartSeconds() { reset(); }
  void add(size_t part, double seconds) {
    const std::lock_guard<std::mutex> lock(mutex_);
    double& slot = seconds_[part];
    slot = std::isnan(slot) ? seconds : slot + seconds;
  }
  double get(size_t part) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return seconds_[part];
  }
  std::array<double, Parts> all() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return seconds_;
  }
  void reset() {
    const std::lock_guard<std::mutex> lock(mutex_);
    seconds_.fill(std::numeric_limits<double>::quiet_NaN());
  }

 private:
  mutable std::mutex mutex_;
  std::array<double, Parts> seconds_;
};

}  // namespace sb
