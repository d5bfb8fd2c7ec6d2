// How DataParallel splits a step's batch over its replicas: torch.chunk's split along the batch axis, as
// nn.DataParallel's scatter does it.
#pragma once
#include <cstdint>
#include <vector>

namespace sb {

struct BatchSlice {
  int64_t first = 0;  // position of the slice's first sample in the whole batch
  int64_t count = 0;  // 0: the replica sits this step out
};

// One slice per replica: ceil(batch / replicas) samples each, the last of them shorter; replicas past
// the batch's end get empty slices (torch.chunk then returns fewer chunks, and DataParallel runs fewer
// replicas).
std::vector<BatchSlice> scatter_slices(int64_t batch, int replicas);

}  // namespace sb
