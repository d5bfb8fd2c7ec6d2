#include "data/shuffle.h"

#include <cstddef>
#include <numeric>
#include <utility>

#include "core/philox.h"

namespace sb {

std::vector<int64_t> philox_permutation(int64_t n, uint64_t key) {
  std::vector<int64_t> p(static_cast<size_t>(n > 0 ? n : 0));
  std::iota(p.begin(), p.end(), int64_t{0});
  for (int64_t t = 0; t + 1 < n; ++t) {
    const int64_t i = n - 1 - t;
    const Philox4 b = philox4x32(kShuffleStream, static_cast<uint64_t>(t), key);
    const uint64_t r = (static_cast<uint64_t>(b.v[1]) << 32) | b.v[0];
    const int64_t j = static_cast<int64_t>(r % static_cast<uint64_t>(i + 1));
    std::swap(p[i], p[j]);
  }
  return p;
}

}  // namespace sb
