// Data-parallel equivalence on the CPU backend: at every step N ranks with per-rank batch B/N all-reduce
// the gradient of the global batch B and apply the optimizer's update of it, so that they train as one
// rank with batch B does (dropout off); every rank holds identical parameters. Runs under mpiexec with
// 1, 2 and 4 ranks.
//
// N ranks sum each gradient in another order than one rank does (per-rank partial sums, then the
// all-reduce), and the order inside each sum is the BLAS kernels' choice, which differs from CPU to CPU.
// So the step is checked in parts that hold for any kernels: the shares make up the global batch, the
// all-reduced gradient is the mean of the shares' gradients to the all-reduce's own rounding, and the
// update is the optimizer's update of it, bit for bit. Whole trajectories are compared only for the
// optimizers that do not amplify rounding (see DataParallelTrajectory).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "comm/mpi_communicator.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "relative_l2.h"
#include "train/engines/cpu_engine.h"
#include "unit/rounding_bound.h"

namespace sb {
namespace {

using testing::relative_l2;

TrainTest small_dataset() {
  return make_synthetic(SyntheticShape{1, 28, 28, 10}, 256, 64, 99);
}

TrainConfig equivalence_config(const std::string& optimizer) {
  TrainConfig c;
  c.model = "mnist-cnn";
  c.dropout = false;
  c.scaling = Scaling::Strong;
  c.batch_size = 16;
  c.optimizer = parse_optimizer_kind(optimizer);
  c.lr = optimizer == "adadelta" ? 1.0 : 0.05;
  c.momentum = optimizer == "sgd" ? 0.9 : 0.0;
  c.seed = 5;
  return c;
}

constexpr int kSteps = 3;

// Rank `rank`'s share of each global batch of epoch 0 when `ranks` ranks train: the sampler's split.
std::vector<std::vector<int64_t>> share_batches(const TrainConfig& config, const TrainTest& data, int ranks, int rank) {
  DistributedSampler sampler(data.train.size(), ranks, rank, true, config.seed, false);
  return split_batches(sampler.indices(0), config.per_rank_batch(ranks), false);
}

// One step as a rank saw it: the state it started from, the all-reduced gradient, the parameters after.
struct RecordedStep {
  EngineState before;
  std::vector<float> gradient, params_after;
};

std::vector<RecordedStep> record_steps(const TrainConfig& config, const TrainTest& data, Communicator& comm, int steps) {
  CpuEngine engine(config, data.train, data.test, comm);
  const auto batches = share_batches(config, data, comm.size(), comm.rank());
  std::vector<RecordedStep> recorded;
  uint64_t position = 0;
  for (int k = 0; k < steps; ++k) {
    RecordedStep step;
    step.before = engine.run_state().save();
    engine.train_step(batches[static_cast<size_t>(k)], StepInfo{0, k, position, config.lr});
    position += batches[static_cast<size_t>(k)].size();
    step.gradient = engine.network().grads();
    step.params_after = engine.network().params();
    recorded.push_back(std::move(step));
  }
  return recorded;
}

// Runs `steps` (>= 1) steps with `comm` and returns the parameters they end with.
std::vector<float> train_steps(const TrainConfig& config, const TrainTest& data, Communicator& comm, int steps) {
  return record_steps(config, data, comm, steps).back().params_after;
}

// The gradient one rank computes for `batch` from `state`.
std::vector<float> one_rank_gradient(const TrainConfig& config, const TrainTest& data, Communicator& alone,
                                     const EngineState& state, std::span<const int64_t> batch, int step) {
  CpuEngine engine(config, data.train, data.test, alone);
  engine.run_state().load(state);
  engine.train_step(batch, StepInfo{0, step, static_cast<uint64_t>(step) * batch.size(), config.lr});
  return engine.network().grads();
}

class DataParallel : public ::testing::TestWithParam<std::string> {};

// The step decomposed: which samples each rank takes, what the all-reduce makes of their gradients, and
// the update. None of it depends on how the BLAS kernels round, so every optimizer is checked, Adam too.
TEST_P(DataParallel, EveryStepAppliesTheUpdateOfTheAveragedShareGradients) {
  auto world = MpiCommunicator::world();
  const int ranks = world->size();
  const TrainTest data = small_dataset();
  const TrainConfig config = equivalence_config(GetParam());
  const std::vector<RecordedStep> steps = record_steps(config, data, *world, kSteps);
  auto alone = world->split(world->rank(), 0);
  std::vector<std::vector<std::vector<int64_t>>> shares;  // [rank][step]
  for (int r = 0; r < ranks; ++r) shares.push_back(share_batches(config, data, ranks, r));
  const auto global_batches = share_batches(config, data, 1, 0);
  for (int k = 0; k < kSteps; ++k) {
    const RecordedStep& step = steps[static_cast<size_t>(k)];
    const auto K = static_cast<size_t>(k);

    // The shares are equal and together make up the global batch, so that their mean gradient is its
    // gradient: the loss is a mean over samples.
    std::vector<int64_t> together;
    for (const auto& rank_shares : shares) {
      ASSERT_EQ(static_cast<int64_t>(rank_shares[K].size()), config.per_rank_batch(ranks)) << "step " << k;
      together.insert(together.end(), rank_shares[K].begin(), rank_shares[K].end());
    }
    std::vector<int64_t> global = global_batches[K];
    std::sort(together.begin(), together.end());
    std::sort(global.begin(), global.end());
    ASSERT_EQ(together, global) << "step " << k << ": the ranks' shares are not the global batch";

    // Each share's gradient as its rank computed it (one rank, the same state and samples: the same
    // kernels on the same operands), averaged in double. The all-reduce adds the N fp32 gradients in
    // some order and divides by N: whatever the order, each element is then within N roundings of the
    // mean magnitude, |got - mean| <= N u mean|g| (u = 2^-24). A wrong batch or a wrong share of the
    // average is off by a good fraction of the gradient.
    std::vector<double> mean(step.gradient.size(), 0.0), magnitude(step.gradient.size(), 0.0);
    for (int r = 0; r < ranks; ++r) {
      const std::vector<float> g = one_rank_gradient(config, data, *alone, step.before, shares[static_cast<size_t>(r)][K], k);
      for (size_t i = 0; i < g.size(); ++i) {
        mean[i] += static_cast<double>(g[i]) / ranks;
        magnitude[i] += std::fabs(static_cast<double>(g[i])) / ranks;
      }
    }
    size_t outside = 0, first = 0;
    for (size_t i = 0; i < mean.size(); ++i) {
      if (std::fabs(static_cast<double>(step.gradient[i]) - mean[i]) > ranks * testing::kFloatUnit * magnitude[i]) {
        if (outside++ == 0) first = i;
      }
    }
    EXPECT_EQ(outside, 0u) << GetParam() << " step " << k << ": " << outside << " of " << mean.size()
                           << " all-reduced gradient elements are off the mean of the shares' gradients, the first at " << first
                           << " (" << step.gradient[first] << " vs " << mean[first] << ")";

    // The update is elementwise and the same code on every CPU: applied to the all-reduced gradient
    // from the state the step began in, it gives the step's parameters bit for bit.
    CpuEngine replay(config, data.train, data.test, *alone);
    replay.run_state().load(step.before);
    std::vector<float> gradient = step.gradient;
    replay.optimizer().step(replay.network().params().data(), gradient.data(), config.lr);
    EXPECT_EQ(replay.network().params(), step.params_after) << GetParam() << " step " << k << ": update";
  }
}

// The whole trajectory, for the optimizers whose update is Lipschitz in the gradient with a modest
// constant: SGD's is linear, and Adadelta scales each element by sqrt(E[dx^2] + eps) / sqrt(E[g^2] + eps)
// with eps = 1e-6 under both roots. fp32 rounding of the gradient (~1e-7) then stays near 1e-7 over the
// steps (measured 1e-8 to 6e-8 whatever the kernels), and 1e-5 is a hundredfold margin. Adam is left to
// the step-wise test (DataParallel): dividing by the root of its own second moment, it turns rounding
// of a near-zero gradient element into an lr-sized step, so that one rank with its samples merely
// reordered already ends 5e-5 to 2e-4 away from itself, depending on the kernels.
class DataParallelTrajectory : public ::testing::TestWithParam<std::string> {};

TEST_P(DataParallelTrajectory, NRanksEqualOneRankWithTheGlobalBatch) {
  auto world = MpiCommunicator::world();
  const TrainTest data = small_dataset();
  const TrainConfig config = equivalence_config(GetParam());
  const std::vector<float> parallel = train_steps(config, data, *world, kSteps);

  // The reference: this rank alone, with the whole global batch.
  auto alone = world->split(world->rank(), 0);
  ASSERT_EQ(alone->size(), 1);
  const std::vector<float> serial = train_steps(config, data, *alone, kSteps);
  const std::vector<float> initial = CpuEngine(config, data.train, data.test, *alone).network().params();
  ASSERT_GT(relative_l2(serial, initial), 1e-3) << "the steps must move the parameters far beyond the tolerance";
  EXPECT_LT(relative_l2(parallel, serial), 1e-5) << world->size() << " ranks vs 1 rank, " << GetParam();
}

// Exact equality holds whatever the kernels: every rank applies the same update to the same all-reduced
// gradient, which MPI delivers bit for bit to every rank.
TEST_P(DataParallel, EveryRankHoldsIdenticalParameters) {
  auto world = MpiCommunicator::world();
  const TrainTest data = small_dataset();
  TrainConfig config = equivalence_config(GetParam());
  config.dropout = true;  // per-rank dropout masks differ; the averaged gradients must not
  config.scaling = Scaling::Weak;
  config.batch_size = 8;
  std::vector<float> params = train_steps(config, data, *world, 2);
  std::vector<float> root = params;
  world->broadcast(std::span<float>(root), 0);
  EXPECT_EQ(params, root) << "rank " << world->rank() << " diverged from rank 0";
}

INSTANTIATE_TEST_SUITE_P(Optimizers, DataParallel, ::testing::Values("sgd", "adadelta", "adam"));
INSTANTIATE_TEST_SUITE_P(Optimizers, DataParallelTrajectory, ::testing::Values("sgd", "adadelta"));

}  // namespace
}  // namespace sb
