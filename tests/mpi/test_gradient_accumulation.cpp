// Gradient accumulation on the CPU engine (--accumulate-steps K): K micro-batches of B make the step
// that one batch of their K*B samples makes, and N ranks accumulating then all-reducing make the step of
// one rank with all N*K*B samples. Runs under mpiexec with 1, 2 and 4 ranks; the one-rank comparisons run
// on every rank alone.
//
// Tolerance: the accumulated gradient is the same sum over samples, added in another order (per
// micro-batch partial sums weighted by 1/K, then their sum, against one sum over the batch; with N ranks
// also the all-reduce's order). fp32 reassociation moves each element by a few units of rounding of its
// magnitude: measured up to 2e-7 relative L2 for the gradients and 2e-8 for the parameters, on 1, 2 and
// 4 ranks; 1e-5 leaves a fiftyfold margin. A wrong weight (no 1/K: a factor K) or a micro-batch left out
// is off by 1/K or more.
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
#include "train/engines/micro_batches.h"
#include "train/loop/trainer.h"

namespace sb {
namespace {

using testing::accumulation_config;
using testing::kAccumulate;
using testing::kMicroBatch;
using testing::relative_l2;
using Case = testing::AccumulationCase;

constexpr double kTolerance = 1e-5;
constexpr int kSteps = 3;

struct Trajectory {
  std::vector<std::vector<float>> gradients, params;  // after each step
  std::vector<EvalTotals> totals;
};

// Trains the given steps (each a list of this rank's indices) and records the all-reduced gradient and the
// parameters after each.
Trajectory run_steps(const TrainConfig& config, const TrainTest& data, Communicator& comm, const std::vector<std::vector<int64_t>>& steps) {
  CpuEngine engine(config, data.train, data.test, comm);
  Trajectory t;
  uint64_t position = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    const PhaseTimes times = engine.train_step(steps[k], StepInfo{0, static_cast<int64_t>(k), position, config.lr});
    EXPECT_FALSE(times.abandoned);
    position += steps[k].size();
    t.gradients.push_back(engine.network().grads());
    t.params.push_back(engine.network().params());
    t.totals.push_back(engine.train_totals(TotalsRead::Take));
  }
  return t;
}

void expect_same_trajectory(const Trajectory& got, const Trajectory& want, const std::vector<float>& initial, const std::string& what) {
  ASSERT_EQ(got.params.size(), want.params.size());
  ASSERT_GT(relative_l2(want.params.back(), initial), 1e-3) << "the steps must move the parameters far beyond the tolerance";
  for (size_t k = 0; k < want.params.size(); ++k) {
    EXPECT_LT(relative_l2(got.gradients[k], want.gradients[k]), kTolerance) << what << ": gradient of step " << k;
    EXPECT_LT(relative_l2(got.params[k], want.params[k]), kTolerance) << what << ": parameters after step " << k;
    EXPECT_EQ(got.totals[k].count, want.totals[k].count) << what << " step " << k;
    EXPECT_EQ(got.totals[k].correct, want.totals[k].correct) << what << " step " << k;
    EXPECT_NEAR(got.totals[k].loss_sum, want.totals[k].loss_sum, 1e-4 * want.totals[k].loss_sum) << what << " step " << k;
  }
}

class GradientAccumulation : public ::testing::TestWithParam<Case> {};

// One rank: K micro-batches of B against one batch of the same K*B samples, and an epoch's tail of 2.5
// micro-batches (B, B, B/2) against one batch of its 2.5 B samples.
TEST_P(GradientAccumulation, KMicroBatchesMakeTheStepOfOneBatchOfTheirSamples) {
  auto world = MpiCommunicator::world();
  auto alone = world->split(world->rank(), 0);
  const Case c = GetParam();
  const TrainTest data = make_synthetic(c.shape, 256, 32, 13);
  const TrainConfig accumulated = accumulation_config(c, kMicroBatch, kAccumulate);
  const TrainConfig big = accumulation_config(c, kMicroBatch * kAccumulate, 1);
  DistributedSampler sampler(data.train.size(), 1, 0, true, accumulated.seed, false);
  std::vector<std::vector<int64_t>> steps = step_batches(sampler.indices(0), kMicroBatch, kAccumulate, false);
  steps.resize(kSteps);
  steps.back().resize(static_cast<size_t>(testing::kTailSamples));  // the tail: fewer than K micro-batches
  const std::vector<float> initial = CpuEngine(big, data.train, data.test, *alone).network().params();
  expect_same_trajectory(run_steps(accumulated, data, *alone, steps), run_steps(big, data, *alone, steps), initial,
                         std::string(c.model) + " K=3");
}

// N ranks, each accumulating K micro-batches of its share and all-reducing once per step, against one
// rank with every rank's samples of the step as one batch.
TEST_P(GradientAccumulation, RanksAccumulatingAndAllReducingMakeTheStepOfOneRankWithTheWholeBatch) {
  auto world = MpiCommunicator::world();
  auto alone = world->split(world->rank(), 0);
  const int ranks = world->size();
  const Case c = GetParam();
  const TrainTest data = make_synthetic(c.shape, 512, 32, 17);
  const TrainConfig accumulated = accumulation_config(c, kMicroBatch, kAccumulate);
  std::vector<std::vector<std::vector<int64_t>>> shares;  // [rank][step]
  for (int r = 0; r < ranks; ++r) {
    DistributedSampler sampler(data.train.size(), ranks, r, true, accumulated.seed, false);
    shares.push_back(step_batches(sampler.indices(0), kMicroBatch, kAccumulate, false));
  }
  std::vector<std::vector<int64_t>> mine, whole(kSteps);
  for (size_t k = 0; k < kSteps; ++k) {
    mine.push_back(shares[static_cast<size_t>(world->rank())][k]);
    for (const auto& rank_steps : shares) whole[k].insert(whole[k].end(), rank_steps[k].begin(), rank_steps[k].end());
  }
  const Trajectory parallel = run_steps(accumulated, data, *world, mine);
  const TrainConfig big = accumulation_config(c, static_cast<int64_t>(whole[0].size()), 1);
  const Trajectory serial = run_steps(big, data, *alone, whole);
  const std::vector<float> initial = CpuEngine(big, data.train, data.test, *alone).network().params();
  ASSERT_GT(relative_l2(serial.params.back(), initial), 1e-3);
  for (size_t k = 0; k < kSteps; ++k) {
    EXPECT_LT(relative_l2(parallel.gradients[k], serial.gradients[k]), kTolerance) << ranks << " ranks, step " << k;
    EXPECT_LT(relative_l2(parallel.params[k], serial.params[k]), kTolerance) << ranks << " ranks, step " << k;
  }
}

// The loop: an epoch has one step per K micro-batches (its tail one more), its schedule counts those steps,
// and its images are every rank's samples, each counted once.
TEST_P(GradientAccumulation, AnEpochCountsOptimizerStepsAndEveryImageOnce) {
  auto world = MpiCommunicator::world();
  const Case c = GetParam();
  const int64_t train_n = 200;
  const TrainTest data = make_synthetic(c.shape, train_n, 32, 19);
  TrainConfig config = accumulation_config(c, kMicroBatch, kAccumulate);
  config.scheduler = ScheduleKind::Cosine;
  config.epochs = 1;
  config.resumable = false;
  CpuEngine engine(config, data.train, data.test, *world);
  const RunSummary run = train({config, *world, engine});
  ASSERT_EQ(run.epochs.size(), 1u);
  const int64_t per_rank = (train_n + world->size() - 1) / world->size();  // the sampler pads to equal shares
  const int64_t micro = (per_rank + kMicroBatch - 1) / kMicroBatch;
  EXPECT_EQ(run.epochs[0].steps, (micro + kAccumulate - 1) / kAccumulate);
  EXPECT_EQ(run.epochs[0].global_samples, per_rank * world->size());
  // Cosine to 0 over the epoch's optimizer steps: the last step's rate is one step short of the end.
  const double steps = static_cast<double>(run.epochs[0].steps);
  EXPECT_NEAR(run.epochs[0].learning_rate, config.lr * (1 + std::cos(M_PI * (steps - 1) / steps)) / 2, 1e-12);
}

// Dropout off: the micro-batches draw other masks than one batch of their samples.
INSTANTIATE_TEST_SUITE_P(Models, GradientAccumulation,
                         ::testing::Values(Case{"mnist-cnn", {1, 28, 28, 10}, false, "mnist_cnn"},
                                           Case{"mlp", {1, 12, 12, 10}, false, "mlp"}),
                         testing::case_name);

}  // namespace
}  // namespace sb
