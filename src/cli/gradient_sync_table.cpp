#include "cli/gradient_sync_table.h"

#include <array>
#include <string>

#include "core/error.h"
#include "train/engines/host_allreduce_sync.h"
#ifdef SCALEBENCH_HAVE_CUDA
#include "train/engines/cuda/bucketed_allreduce_sync.h"
#endif

namespace sb {
namespace {

const auto kStrategies = std::to_array<const GradientSyncStrategy*>({
    &kHostAllreduce,
#ifdef SCALEBENCH_HAVE_CUDA
    &cuda::kBucketedAllreduce,
#endif
});

}  // namespace

std::span<const GradientSyncStrategy* const> gradient_sync_strategies() { return kStrategies; }

const GradientSyncStrategy& gradient_sync_for(Device device) {
  for (const GradientSyncStrategy* row : kStrategies)
    if (row->device == device) return *row;
  fatal("no gradient-sync strategy for --device " + std::string(name_of(device)));
}

}  // namespace sb
