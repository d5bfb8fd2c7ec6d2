#include "comm/check_pattern.h"

#include <algorithm>

namespace sb {

CheckPattern::CheckPattern(SweepDtype dtype, int ranks) {
  // Values 0..k-1 on each of `ranks` ranks sum to at most (k-1)*ranks, which must stay exact.
  const double exact = max_exact_integer(dtype);
  const int64_t k = std::min<int64_t>(8, static_cast<int64_t>(exact / ranks) + 1);
  if (k >= 2) {
    modulus_ = k;
  } else {  // more ranks than exact integers: a single 1 per element keeps the sum exact
    one_hot_ = true;
    modulus_ = ranks;
  }
  expected_.assign(static_cast<size_t>(modulus_), 0.0);
  for (int64_t j = 0; j < modulus_; ++j)
    for (int r = 0; r < ranks; ++r) expected_[static_cast<size_t>(j)] += value(r, j);
}

}  // namespace sb
