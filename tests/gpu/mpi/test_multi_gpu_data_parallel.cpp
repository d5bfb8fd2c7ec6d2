// Data parallelism on GPUs through NCCL: 2 ranks with per-rank batch B/2 end with the same
// parameters after K steps as 1 rank with batch B (dropout off, fp32 without TF32), and after steps with
// dropout on every rank holds bit-identical parameters (the all-reduce hands every rank the same
// average). Runs under mpiexec -np 2 and skips unless every rank sees at least 2 GPUs.
#include <gtest/gtest.h>

#include <cmath>

#include "comm/mpi_communicator.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "relative_l2.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"

namespace sb {
namespace {

bool enough_gpus(Communicator& comm) {
  return comm.size() >= 2 && comm.allreduce_min(visible_gpu_count()) >= comm.size();
}

TrainConfig gpu_config() {
  TrainConfig c;
  c.model = "mnist-cnn";
  c.device = Device::Cuda;
  c.precision = Precision::FP32;  // no TF32: the comparison is at fp32 rounding
  c.deterministic = true;
  c.dropout = false;
  c.scaling = Scaling::Strong;
  c.batch_size = 32;
  c.optimizer = OptimizerKind::Sgd;
  c.lr = 0.05;
  c.momentum = 0.9;
  c.seed = 7;
  c.eval_batch_size = 64;
  return c;
}

std::vector<float> train_steps(const TrainConfig& config, const TrainTest& data, Communicator& comm, int local_rank,
                               int steps) {
  auto engine = make_cuda_engine(config, data.train, data.test, comm, local_rank, comm.size());
  DistributedSampler sampler(data.train.size(), comm.size(), comm.rank(), true, config.seed, false);
  const auto batches = split_batches(sampler.indices(0), config.per_rank_batch(comm.size()), false);
  uint64_t position = 0;
  for (int k = 0; k < steps; ++k) {
    engine->train_step(batches[static_cast<size_t>(k)], StepInfo{0, k, position, config.lr});
    position += batches[static_cast<size_t>(k)].size();
  }
  engine->synchronize();
  return engine->run_state().save().params;
}

TEST(MultiGpuDataParallel, TwoGpusEqualOneGpuWithTheGlobalBatch) {
  auto world = MpiCommunicator::world();
  if (!enough_gpus(*world)) GTEST_SKIP() << "needs one GPU per rank and at least 2 ranks";
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 512, 64, 3);
  const TrainConfig config = gpu_config();
  // More steps than the engine's two eager warm-up steps, so the replayed CUDA graph is covered too.
  const int steps = 5;
  const std::vector<float> parallel = train_steps(config, data, *world, world->rank(), steps);
  auto alone = world->split(world->rank(), 0);
  const std::vector<float> serial = train_steps(config, data, *alone, world->rank(), steps);
  EXPECT_LT(testing::relative_l2(parallel, serial), 1e-5) << world->size() << " GPUs vs 1 GPU";
  const std::vector<float> initial = train_steps(config, data, *alone, world->rank(), 0);
  EXPECT_GT(testing::relative_l2(serial, initial), 1e-4) << "the steps must move the parameters";
}

TEST(MultiGpuDataParallel, EveryRankHoldsIdenticalParametersAfterTheAllReduce) {
  auto world = MpiCommunicator::world();
  if (!enough_gpus(*world)) GTEST_SKIP() << "needs one GPU per rank and at least 2 ranks";
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 512, 64, 4);
  TrainConfig config = gpu_config();
  config.dropout = true;  // each rank draws its own masks; the averaged gradients must still agree
  config.scaling = Scaling::Weak;
  config.batch_size = 16;
  config.precision = Precision::BF16;
  std::vector<float> params = train_steps(config, data, *world, world->rank(), 5);
  std::vector<float> root = params;
  world->broadcast(std::span<float>(root), 0);
  EXPECT_EQ(params, root) << "rank " << world->rank() << " diverged from rank 0";
}

}  // namespace
}  // namespace sb
