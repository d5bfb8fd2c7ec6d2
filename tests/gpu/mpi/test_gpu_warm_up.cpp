// The warm-up before the training clock (train/loop/warm_up.h) on the CUDA engine: a run with it trains bit
// for bit as a run without it, although the first runs its whole first epoch from the captured graph and
// the second builds its plans, runs two eager steps and captures the graph twice (again after the first
// evaluation grew the buffers). Deterministic fp32 with the heuristics' plans (no autotuning, whose
// timing could pick other plans in the two runs), dropout on, a short last step. Runs under mpiexec on
// any number of ranks (ctest: 2) and skips unless every rank has a GPU of its own.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "comm/mpi_communicator.h"
#include "core/startup_clock.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/micro_batches.h"
#include "train/loop/trainer.h"
#include "train/loop/warm_up.h"

namespace sb {
namespace {

struct Outcome {
  RunSummary run;
  std::vector<float> params, buffers;
  double warm_up_seconds = 0;
};

Outcome train_once(TrainConfig config, bool warm_up, const TrainTest& data, Communicator& comm) {
  config.untimed_init = warm_up;
  reset_startup_times();
  auto engine = make_cuda_engine(config, data.train, data.test, comm, comm.rank(), comm.size());
  Outcome o;
  o.run = train({config, comm, *engine});
  const EngineState state = engine->run_state().save();
  o.params = state.params;
  o.buffers = state.buffers;
  o.warm_up_seconds = startup_seconds(StartupPart::warm_up);
  reset_startup_times();
  return o;
}

TEST(GpuWarmUp, TheWarmUpLeavesTheTrainingBitForBitTheSame) {
  auto world = MpiCommunicator::world();
  if (world->allreduce_min(visible_gpu_count()) < world->size()) GTEST_SKIP() << "needs one GPU per rank";
  // 100 samples per rank in batches of 8: twelve full steps and a short one of 4.
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 100 * world->size(), 96, 5);
  TrainConfig config;
  config.model = "mnist-cnn";  // dropout: masks keyed by the step
  config.device = Device::Cuda;
  config.precision = Precision::FP32;
  config.deterministic = true;
  config.autotune = false;
  config.plan_cache = "";
  config.cuda_graph = true;
  config.epochs = 3;
  config.batch_size = 8;
  config.eval_batch_size = 32;  // larger than the training batch: the first evaluation grows the buffers
  config.optimizer = OptimizerKind::Adadelta;  // the guide's recipe: optimizer state and a step schedule
  config.lr = 1.0;
  config.scheduler = ScheduleKind::Step;
  const Outcome cold = train_once(config, false, data, *world);
  const Outcome warm = train_once(config, true, data, *world);
  EXPECT_TRUE(std::isnan(cold.warm_up_seconds));
  EXPECT_GT(warm.warm_up_seconds, 0.0);
  ASSERT_EQ(cold.run.epochs.size(), 3u);
  ASSERT_EQ(warm.run.epochs.size(), cold.run.epochs.size());
  for (size_t e = 0; e < cold.run.epochs.size(); ++e) {
    EXPECT_EQ(warm.run.epochs[e].train_loss, cold.run.epochs[e].train_loss) << "epoch " << e + 1;
    EXPECT_EQ(warm.run.epochs[e].train_accuracy, cold.run.epochs[e].train_accuracy) << "epoch " << e + 1;
    EXPECT_EQ(warm.run.epochs[e].test_loss, cold.run.epochs[e].test_loss) << "epoch " << e + 1;
    EXPECT_EQ(warm.run.epochs[e].test_accuracy, cold.run.epochs[e].test_accuracy) << "epoch " << e + 1;
  }
  EXPECT_EQ(warm.params, cold.params);
  EXPECT_EQ(warm.buffers, cold.buffers);
}

// After the warm-up the training captures no graph: the first epoch replays the graph the warm-up
// captured, and the evaluations (whose batch is larger than the training batch) move no buffer it holds.
TEST(GpuWarmUp, AfterTheWarmUpTheTrainingCapturesNoGraph) {
  auto world = MpiCommunicator::world();
  if (world->allreduce_min(visible_gpu_count()) < world->size()) GTEST_SKIP() << "needs one GPU per rank";
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 100 * world->size(), 96, 5);
  TrainConfig config;
  config.model = "mnist-cnn";
  config.device = Device::Cuda;
  config.plan_cache = "";
  config.cuda_graph = true;
  config.epochs = 2;
  config.batch_size = 8;
  config.eval_batch_size = 32;
  reset_startup_times();
  auto engine = make_cuda_engine(config, data.train, data.test, *world, world->rank(), world->size());
  const DistributedSampler sampler(data.train.size(), world->size(), world->rank(), true, config.seed, config.drop_last);
  const auto steps = step_batches(sampler.indices(0), config.per_rank_batch(world->size()), 1, config.drop_last);
  std::vector<int64_t> test_shard;  // the trainer's: r, r + W, ...
  for (int64_t i = world->rank(); i < data.test.size(); i += world->size()) test_shard.push_back(i);
  warm_up(*engine, steps, StepInfo{0, 0, 0, config.lr}, test_shard, config.eval_batch_size);
  const double captured = startup_seconds(StartupPart::graph_capture);
  ASSERT_GT(captured, 0.0) << "the warm-up captured no graph";
  config.untimed_init = false;  // warmed up above
  const RunSummary run = train({config, *world, *engine});
  ASSERT_EQ(run.epochs_run, 2);
  EXPECT_EQ(startup_seconds(StartupPart::graph_capture), captured) << "a capture after the warm-up";
  reset_startup_times();
}

}  // namespace
}  // namespace sb
