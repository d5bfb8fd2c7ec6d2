// With NCCL's graph mixing off (comm/cuda/nccl_communicator.h), an all-reduce launched outside a CUDA graph
// must not run while a step graph's may: the engine synchronises before an eager step that follows graph
// replays. The run below queues its steps without any synchronisation of its own: two eager steps, the
// capture, replays, the epoch's short last step (eager, right behind a replay) and the next epoch's
// replays. After it the parameters and the optimizer state are those of the same steps with the graph off
// (within the 1e-5 that a graph's replays and eager steps differ by; an all-reduce mixed up with another is far
// off), and bit for bit the same on every rank.
// Needs one GPU per rank and at least 2 ranks; skips otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/mpi_communicator.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "engine_steps.h"
#include "relative_l2.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/micro_batches.h"

namespace sb {
namespace {

constexpr int64_t kBatch = 8;           // per rank
constexpr int64_t kTrainPerRank = 52;   // six full steps and a short one of 4 samples an epoch
constexpr int kEpochs = 2;

// The state after kEpochs epochs queued back to back, synchronised once at the end.
EngineState state_after_epochs(const TrainConfig& config, const TrainTest& data, Communicator& comm) {
  auto engine = make_cuda_engine(config, data.train, data.test, comm, comm.rank(), comm.size());
  DistributedSampler sampler(data.train.size(), comm.size(), comm.rank(), true, config.seed, false);
  uint64_t position = 0;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    const auto batches = step_batches(sampler.indices(epoch), kBatch, 1, false);
    EXPECT_LT(batches.back().size(), static_cast<size_t>(kBatch)) << "the epoch must end with a short step";
    for (size_t k = 0; k < batches.size(); ++k) {
      engine->train_step(batches[k], StepInfo{epoch, static_cast<int64_t>(k), position, config.lr});
      position += batches[k].size();
    }
  }
  engine->synchronize();
  return engine->run_state().save();
}

TEST(EagerAfterGraph, ShortStepsBehindReplaysMatchTheEagerRunOnEveryRank) {
  auto world = MpiCommunicator::world();
  if (world->size() < 2 || world->allreduce_min(visible_gpu_count()) < world->size())
    GTEST_SKIP() << "needs one GPU per rank and at least 2 ranks";
  const TrainTest data = make_synthetic({1, 28, 28, 10}, kTrainPerRank * world->size(), 16, 17);
  const TrainConfig graph = testing::comparable_engine_config("mnist-cnn", Precision::FP32, true, kBatch, "adadelta", 21);
  const TrainConfig eager = testing::comparable_engine_config("mnist-cnn", Precision::FP32, false, kBatch, "adadelta", 21);
  const EngineState with_graph = state_after_epochs(graph, data, *world);
  const char* mixing = std::getenv("NCCL_GRAPH_MIXING_SUPPORT");
  ASSERT_NE(mixing, nullptr) << "the communicator sets NCCL_GRAPH_MIXING_SUPPORT where the environment does not";
  const EngineState without = state_after_epochs(eager, data, *world);
  EXPECT_EQ(with_graph.optimizer_steps, without.optimizer_steps);
  EXPECT_EQ(with_graph.optimizer_steps, 2 * 7) << "seven steps an epoch";
  EXPECT_LT(testing::relative_l2(with_graph.params, without.params), 1e-5)
      << "parameters against the eager run (NCCL_GRAPH_MIXING_SUPPORT=" << mixing << ")";
  ASSERT_EQ(with_graph.optimizer_state.size(), without.optimizer_state.size());
  for (size_t s = 0; s < with_graph.optimizer_state.size(); ++s) {
    const auto& [name, values] = with_graph.optimizer_state[s];
    EXPECT_LT(testing::relative_l2(values, without.optimizer_state[s].second), 1e-5) << name << " against the eager run";
    EXPECT_TRUE(testing::same_on_every_rank(*world, values)) << name << " differs across ranks";
  }
  EXPECT_TRUE(testing::same_on_every_rank(*world, with_graph.params)) << "parameters differ across ranks";
  for (float p : with_graph.params) ASSERT_TRUE(std::isfinite(p)) << "the steps must keep the parameters finite";
}

}  // namespace
}  // namespace sb
