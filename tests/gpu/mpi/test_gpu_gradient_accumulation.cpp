// Gradient accumulation on the CUDA engine (--accumulate-steps K) against the CPU engine's, which
// tests/mpi/test_gradient_accumulation.cpp holds to one batch of the same samples: per-step losses and
// parameters after each step, for full steps (two eager, then captured as a CUDA graph and replayed, so
// that the graph's micro-batches, their dropout keys and augmentation positions and the one all-reduce
// are what it replays) and for an epoch's tail of 2.5 micro-batches (eager). Every rank first checks on
// its own GPU alone, then all ranks together, where the all-reduce goes through NCCL on the GPU and MPI
// on the CPU. fp32 without TF32, deterministic cuDNN engines. With dropout on, both engines draw each
// micro-batch's masks from Philox keyed by its own number (train/engines/micro_batches.h), so a micro-batch
// keyed as another (or as its step) drops other elements than the CPU and the parameters part at once.
//
// Tolerance 1e-5 relative, as the whole-model steps (test_gpu_model_steps.cpp) hold mnist-cnn and the
// MLP: the GPU sums in another order than the CPU, and fp32 rounding of ~1e-7 per step stays far below
// 1e-5 over these steps at this rate; a micro-batch weighted wrongly or all-reduced twice is off by 1/K.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "accumulation_settings.h"
#include "comm/mpi_communicator.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "relative_l2.h"
#include "train/engines/cpu_engine.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/micro_batches.h"

namespace sb {
namespace {

using testing::accumulation_config;
using testing::kAccumulate;
using testing::kMicroBatch;
using testing::relative_l2;
using Case = testing::AccumulationCase;

constexpr double kTolerance = 1e-5;
constexpr size_t kFullSteps = 5;  // two eager, the capture, two replays

struct Trace {
  std::vector<double> losses;
  std::vector<std::vector<float>> params;  // after each step
};

// This rank's steps of epoch 0: kFullSteps full ones, then a tail of 2.5 micro-batches.
std::vector<std::vector<int64_t>> rank_steps(const TrainConfig& config, const TrainTest& data, Communicator& comm) {
  DistributedSampler sampler(data.train.size(), comm.size(), comm.rank(), true, config.seed, false);
  std::vector<std::vector<int64_t>> steps = step_batches(sampler.indices(0), kMicroBatch, kAccumulate, false);
  steps.resize(kFullSteps + 1);
  steps.back().resize(static_cast<size_t>(testing::kTailSamples));
  return steps;
}

Trace run(Engine& engine, const TrainConfig& config, const std::vector<std::vector<int64_t>>& steps) {
  Trace t;
  uint64_t position = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    engine.train_step(steps[k], StepInfo{0, static_cast<int64_t>(k), position, config.lr});
    position += steps[k].size();
    engine.synchronize();
    const EvalTotals totals = engine.train_totals(TotalsRead::Take);
    EXPECT_EQ(totals.count, static_cast<int64_t>(steps[k].size())) << "step " << k << ": every micro-batch's samples";
    t.losses.push_back(totals.loss_sum / static_cast<double>(totals.count));
    t.params.push_back(engine.run_state().save().params);
  }
  return t;
}

void expect_cuda_follows_cpu(const Case& c, Communicator& comm, const std::string& where) {
  const TrainTest data = make_synthetic(c.shape, 512, 16, 29);
  TrainConfig config = accumulation_config(c, kMicroBatch, kAccumulate);
  const auto steps = rank_steps(config, data, comm);
  CpuEngine cpu(config, data.train, data.test, comm);
  const std::vector<float> initial = cpu.network().params();
  const Trace want = run(cpu, config, steps);
  config.device = Device::Cuda;
  config.precision = Precision::FP32;
  config.deterministic = true;
  auto gpu = make_cuda_engine(config, data.train, data.test, comm, comm.rank(), comm.size());
  const Trace got = run(*gpu, config, steps);
  ASSERT_GT(relative_l2(want.params.back(), initial), 1e-3) << "the steps must move the parameters far beyond the tolerance";
  for (size_t k = 0; k < steps.size(); ++k) {
    EXPECT_NEAR(got.losses[k], want.losses[k], kTolerance * std::fabs(want.losses[k])) << c.name << " " << where << " step " << k;
    EXPECT_LT(relative_l2(got.params[k], want.params[k]), kTolerance) << c.name << " " << where << ": parameters after step " << k;
  }
}

class GpuGradientAccumulation : public ::testing::TestWithParam<Case> {};

TEST_P(GpuGradientAccumulation, EachRankAloneFollowsTheCpuEngine) {
  auto world = MpiCommunicator::world();
  if (world->allreduce_min(visible_gpu_count()) == 0) GTEST_SKIP() << "no CUDA device";
  auto alone = world->split(world->rank(), 0);
  expect_cuda_follows_cpu(GetParam(), *alone, "rank " + std::to_string(world->rank()) + " alone");
}

TEST_P(GpuGradientAccumulation, AllRanksTogetherFollowTheCpuEngine) {
  auto world = MpiCommunicator::world();
  if (world->allreduce_min(visible_gpu_count()) < world->size()) GTEST_SKIP() << "needs one GPU per rank";
  expect_cuda_follows_cpu(GetParam(), *world, std::to_string(world->size()) + " ranks");
}

INSTANTIATE_TEST_SUITE_P(Models, GpuGradientAccumulation,
                         ::testing::Values(Case{"mnist-cnn", {1, 28, 28, 10}, false, "mnist_cnn"},
                                           Case{"mnist-cnn", {1, 28, 28, 10}, true, "mnist_cnn_dropout"},
                                           Case{"mlp", {1, 28, 28, 10}, false, "mlp"}),
                         testing::case_name);

}  // namespace
}  // namespace sb
