// The host gradient-sync strategies (train/engines/gradient_sync.h), each listed below as the strategies
// table lists it (src/cli/gradient_sync_table.cpp): after a step's begin, gradients_ready and finish,
// every rank holds the average of the ranks' gradients, step after step. Runs under mpiexec with 1, 2 and
// 4 ranks.
//
// Tolerance: each element is the mean of at most four ranks' values; a strategy may add them in another
// order (a tree, a hierarchy), which moves an fp32 element by a few units of rounding: 1e-6 relative. A
// rank left out, or a sum not divided by the rank count, is off by a quarter or more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <vector>

#include "comm/mpi_communicator.h"
#include "train/engines/host_allreduce_sync.h"

namespace sb {
namespace {

// The host rows of the strategies table.
const GradientSyncStrategy* const kHostStrategies[] = {&kHostAllreduce};

float gradient_of(int rank, size_t i, int step) {
  return (0.5f * static_cast<float>(rank + 1) - 0.001f * static_cast<float>(i)) * static_cast<float>(step + 1);
}

TEST(HostGradientSync, EveryRankHoldsTheAverage) {
  auto world = MpiCommunicator::world();
  const int ranks = world->size();
  const TrainConfig config;
  for (const GradientSyncStrategy* row : kHostStrategies) {
    SCOPED_TRACE(row->name);
    EXPECT_EQ(row->device, Device::Cpu);
    std::vector<float> grads(1003);
    const std::unique_ptr<GradientSync> sync = row->make(GradientSyncSetup{config, *world, std::span<float>(grads)});
    EXPECT_EQ(sync->averages(), ranks > 1);
    for (int step = 0; step < 3; ++step) {
      for (size_t i = 0; i < grads.size(); ++i) grads[i] = gradient_of(world->rank(), i, step);
      sync->begin(0, 1);
      sync->gradients_ready(0, nullptr);
      sync->finish();
      for (size_t i = 0; i < grads.size(); ++i) {
        double want = 0;
        for (int r = 0; r < ranks; ++r) want += gradient_of(r, i, step);
        want /= ranks;
        ASSERT_NEAR(grads[i], want, 1e-6 * std::max(1.0, std::abs(want))) << "element " << i << " of step " << step;
      }
    }
  }
}

}  // namespace
}  // namespace sb
