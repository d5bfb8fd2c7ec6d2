// nn.DataParallel on GPUs (src/train/engines/dp/cuda/): one process driving 2 GPUs computes the update of the
// CUDA engine on one GPU with the whole batch, for the models without batch norm (mlp, mnist-cnn), with
// dropout on: each replica draws its slice's part of the whole batch's mask. fp32 without TF32 and
// deterministic cuDNN engines, so the two differ only by the order in which the slices' gradients are
// summed (1e-5 relative, as the DDP test). Launched as 2 ranks like the other multi-GPU tests; rank 0
// drives GPUs 0 and 1 (DataParallel is one process), rank 1 skips. Skips unless rank 0 sees 2 GPUs.
#include <gtest/gtest.h>

#include "comm/mpi_communicator.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "relative_l2.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/dp/cuda/cuda_replicas.h"
#include "train/engines/dp/data_parallel_engine.h"

namespace sb {
namespace {

TrainConfig gpu_config(const std::string& model) {
  TrainConfig c;
  c.model = model;
  c.device = Device::Cuda;
  c.precision = Precision::FP32;
  c.deterministic = true;
  c.scaling = Scaling::Strong;  // --batch-size is the step's whole batch for both engines
  c.batch_size = 32;
  c.lr = 0.05;
  c.momentum = 0.9;
  c.seed = 7;
  c.eval_batch_size = 64;
  return c;
}

constexpr int kSteps = 5;  // beyond the CUDA engine's two eager steps, so its graph replays are compared too

std::vector<float> train_steps(Engine& engine, const TrainConfig& config, int64_t train_size) {
  DistributedSampler sampler(train_size, 1, 0, true, config.seed, false);
  const auto batches = split_batches(sampler.indices(0), config.batch_size, false);
  uint64_t position = 0;
  for (int k = 0; k < kSteps; ++k) {
    engine.train_step(batches[static_cast<size_t>(k)], StepInfo{0, k, position, config.lr});
    position += batches[static_cast<size_t>(k)].size();
  }
  engine.synchronize();
  return engine.run_state().save().params;
}

class GpuDataParallelReplicas : public ::testing::TestWithParam<const char*> {};

TEST_P(GpuDataParallelReplicas, TwoGpusInOneProcessEqualOneGpuWithTheWholeBatch) {
  auto world = MpiCommunicator::world();
  auto alone = world->split(world->rank(), 0);
  const bool runs = world->rank() == 0 && visible_gpu_count() >= 2;
  if (!runs) GTEST_SKIP() << (world->rank() == 0 ? "needs 2 GPUs visible to one process" : "rank 0 drives both GPUs");
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 512, 64, 3);
  const TrainConfig serial_config = gpu_config(GetParam());
  auto serial = make_cuda_engine(serial_config, data.train, data.test, *alone, 0, 1);
  const std::vector<float> initial = serial->run_state().save().params;
  const std::vector<float> want = train_steps(*serial, serial_config, data.train.size());

  TrainConfig dp_config = serial_config;
  dp_config.parallel = Parallel::Dp;
  dp_config.replicas = 2;
  DataParallelEngine dp(make_cuda_replicas(dp_config, data.train, data.test), data.train.size(), data.test.size());
  const std::vector<float> got = train_steps(dp, dp_config, data.train.size());

  EXPECT_GT(testing::relative_l2(want, initial), 1e-4) << "the steps must move the parameters";
  EXPECT_LT(testing::relative_l2(got, want), 1e-5) << "DataParallel on 2 GPUs vs 1 GPU, " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Models, GpuDataParallelReplicas, ::testing::Values("mlp", "mnist-cnn"),
                         [](const auto& info) { return std::string(info.param) == "mlp" ? "mlp" : "mnist_cnn"; });

}  // namespace
}  // namespace sb
