// ||got - want|| / ||want|| over two flat vectors, accumulated in double: the tests' measure of how far
// one run's parameters (or statistics) are from another's.
#pragma once
#include <cmath>
#include <vector>

namespace sb::testing {

template <typename A, typename B>
double relative_l2(const std::vector<A>& got, const std::vector<B>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = static_cast<double>(got[i]) - static_cast<double>(want[i]);
    diff += e * e;
    norm += static_cast<double>(want[i]) * static_cast<double>(want[i]);
  }
  return std::sqrt(diff / norm);
}

}  // namespace sb::testing
