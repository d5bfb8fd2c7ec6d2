// The median of a list of measurements: the middle value, or the mean of the two middle values of an even
// count (NaN for none). One definition for every figure the product reports as a median.
#pragma once
#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <vector>

namespace sb {

inline double median_of(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  if (values.size() % 2) return *mid;
  return 0.5 * (*std::max_element(values.begin(), mid) + *mid);
}

// The index of the lower median of a non-empty list: the middle of an odd count, the lower of the two middle
// ones of an even count (equal values: the earlier index), so that the median is always one member's own,
// e.g. one rank's (with two ranks, the earlier one's).
inline size_t lower_median_index(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  return order[(order.size() - 1) / 2];
}

// That member's value (NaN for none).
inline double lower_median(const std::vector<double>& values) {
  return values.empty() ? std::numeric_limits<double>::quiet_NaN() : values[lower_median_index(values)];
}

}  // namespace sb
