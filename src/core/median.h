// The median of a list of measurements: the middle value, or the mean of the two middle values of an even
// count (NaN for none). One definition for every figure the product reports as a median.
#pragma once
#include <algorithm>
#include <limits>
#include <vector>

namespace sb {

inline double median_of(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  if (values.size() % 2) return *mid;
  return 0.5 * (*std::max_element(values.begin(), mid) + *mid);
}

}  // namespace sb
