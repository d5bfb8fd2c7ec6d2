#include "train/engines/dp/batch_slices.h"

#include <algorithm>

namespace sb {

std::vector<BatchSlice> scatter_slices(int64_t batch, int replicas) {
  std::vector<BatchSlice> slices(static_cast<size_t>(replicas));
  const int64_t chunk = (batch + replicas - 1) / replicas;
  int64_t first = 0;
  for (BatchSlice& s : slices) {
    s.first = first;
    s.count = std::max<int64_t>(0, std::min(chunk, batch - first));
    first += s.count;
  }
  return slices;
}

}  // namespace sb
