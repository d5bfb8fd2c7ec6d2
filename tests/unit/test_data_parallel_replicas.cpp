// nn.DataParallel's orchestration (src/train/engines/dp/) over CPU replicas in one process: N replicas, each
// running a slice of the batch on its own thread, compute the update of one process with the whole batch.
//
// The replicas sum their slices' gradients in another order than one backward over the whole batch does
// (each slice's GEMMs sum its samples, then the reduce adds the slices), so parameters agree to fp32
// rounding of those sums, not bit for bit; the loss, its gradient and every dropout mask are the same
// computation. SGD with momentum does not amplify such rounding over a few steps, so 1e-5 relative (the
// DDP equivalence test's bound for the same reason) holds while the steps move the parameters by > 1e-3.
#include <gtest/gtest.h>

#include <atomic>
#include <ostream>
#include <set>
#include <stdexcept>
#include <thread>

#include "core/error.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "nn/cpu/dropout.h"
#include "relative_l2.h"
#include "train/engines/cpu_engine.h"
#include "train/engines/dp/batch_slices.h"
#include "train/engines/dp/cpu_replicas.h"
#include "train/engines/dp/data_parallel_engine.h"
#include "train/engines/dp/replica_threads.h"
#include "unit/solo_communicator.h"

namespace sb {
namespace {

using testing::relative_l2;
using testing::SoloCommunicator;

TEST(ScatterSlices, SplitsAsTorchChunkDoes) {
  const auto s = scatter_slices(10, 4);  // torch.chunk: 3, 3, 3, 1
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].first, 0);
  EXPECT_EQ(s[1].first, 3);
  EXPECT_EQ(s[2].first, 6);
  EXPECT_EQ(s[3].first, 9);
  EXPECT_EQ(s[2].count, 3);
  EXPECT_EQ(s[3].count, 1);
  const auto few = scatter_slices(2, 4);  // fewer samples than replicas: the last two sit out
  EXPECT_EQ(few[1].first, 1);
  EXPECT_EQ(few[1].count, 1);
  EXPECT_EQ(few[2].count, 0);
  EXPECT_EQ(few[3].count, 0);
}

TEST(ReplicaThreads, RunsEachReplicaOnItsOwnThreadEveryTime) {
  ReplicaThreads threads(3);
  std::vector<std::thread::id> first(3), second(3);
  threads.run([&](int r) { first[static_cast<size_t>(r)] = std::this_thread::get_id(); });
  threads.run([&](int r) { second[static_cast<size_t>(r)] = std::this_thread::get_id(); });
  EXPECT_EQ(first, second);
  EXPECT_EQ(std::set<std::thread::id>(first.begin(), first.end()).size(), 3u);
  EXPECT_EQ(first[0] == std::this_thread::get_id(), false);
}

TEST(ReplicaThreads, RethrowsAReplicasErrorAfterAllFinish) {
  ReplicaThreads threads(3);
  std::atomic<int> finished{0};
  EXPECT_THROW(threads.run([&](int r) {
                 if (r == 1) throw std::runtime_error("replica 1 failed");
                 ++finished;
               }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 2);
  threads.run([&](int) { ++finished; });  // usable again
  EXPECT_EQ(finished.load(), 5);
}

TEST(DropoutSlices, ASliceDrawsItsPartOfTheWholeBatchsMask) {
  LayerSpec spec;
  spec.kind = LayerKind::Dropout;
  spec.name = "drop";
  spec.p = 0.5;
  cpu::Dropout<float> whole_layer(spec), slice_layer(spec);
  whole_layer.set_random_stream(7, 3);
  slice_layer.set_random_stream(7, 3);
  slice_layer.set_first_sample(2);
  Tensor<float> whole(Shape{5, 8}, 1.0f), slice(Shape{3, 8}, 1.0f);
  const Tensor<float>& w = whole_layer.forward(whole, cpu::Mode::Train);
  const Tensor<float>& s = slice_layer.forward(slice, cpu::Mode::Train);
  for (int64_t i = 0; i < s.numel(); ++i) EXPECT_EQ(s[i], w[16 + i]) << i;
  // A slice at an offset that is not a multiple of 4 elements is refused (the GPU draws 4 at a time).
  Tensor<float> odd(Shape{2, 3}, 1.0f);
  slice_layer.set_first_sample(1);
  EXPECT_THROW(slice_layer.forward(odd, cpu::Mode::Train), UserError);
}

TrainTest small_dataset() { return make_synthetic(SyntheticShape{1, 28, 28, 10}, 96, 16, 31); }

TrainConfig one_process_config(const std::string& model, int64_t batch) {
  TrainConfig c;
  c.model = model;
  c.batch_size = batch;
  c.lr = 0.05;
  c.momentum = 0.9;
  c.seed = 11;
  return c;
}

constexpr int kSteps = 3;

// Trains kSteps steps of `batch` samples from epoch 0's shuffled order; returns the parameters.
std::vector<float> train_steps(Engine& engine, const TrainConfig& config, int64_t train_size, int64_t batch) {
  DistributedSampler sampler(train_size, 1, 0, true, config.seed, false);
  const auto batches = split_batches(sampler.indices(0), batch, false);
  uint64_t position = 0;
  for (int k = 0; k < kSteps; ++k) {
    const auto& b = batches[static_cast<size_t>(k)];
    engine.train_step(b, StepInfo{0, k, position, config.lr});
    position += b.size();
  }
  return engine.run_state().save().params;
}

struct ReplicaCase {
  const char* model;
  int replicas;
  int64_t batch;  // the step's whole batch
};

void PrintTo(const ReplicaCase& c, std::ostream* os) {
  *os << c.model << " on " << c.replicas << " replicas, batch " << c.batch;
}

class DataParallelReplicas : public ::testing::TestWithParam<ReplicaCase> {};

TEST_P(DataParallelReplicas, EqualOneProcessWithTheWholeBatch) {
  const ReplicaCase& c = GetParam();
  const TrainTest data = small_dataset();
  SoloCommunicator comm;
  const TrainConfig serial_config = one_process_config(c.model, c.batch);
  CpuEngine serial(serial_config, data.train, data.test, comm);
  const std::vector<float> initial = serial.run_state().save().params;
  const std::vector<float> want = train_steps(serial, serial_config, data.train.size(), c.batch);
  const EvalTotals want_totals = serial.train_totals(TotalsRead::Take);

  TrainConfig dp_config = serial_config;
  dp_config.parallel = Parallel::Dp;
  dp_config.replicas = c.replicas;
  DataParallelEngine dp(std::make_unique<CpuReplicas>(dp_config, data.train, data.test, comm), data.train.size(),
                        data.test.size());
  ASSERT_EQ(dp.run_state().save().params, initial) << "every replica starts from the seed's weights";
  const std::vector<float> got = train_steps(dp, dp_config, data.train.size(), c.batch);
  const EvalTotals got_totals = dp.train_totals(TotalsRead::Take);

  ASSERT_GT(relative_l2(want, initial), 1e-3) << "the steps must move the parameters far beyond the tolerance";
  EXPECT_LT(relative_l2(got, want), 1e-5) << c.replicas << " replicas of " << c.model;
  EXPECT_EQ(got_totals.count, want_totals.count);
  EXPECT_EQ(got_totals.correct, want_totals.correct);
  EXPECT_NEAR(got_totals.loss_sum, want_totals.loss_sum, 1e-4 * want_totals.loss_sum);
}

// mnist-cnn keeps dropout on: its masks line up only if each replica draws its slice's part. A batch of
// 2 over 3 replicas leaves one replica without samples, which must add nothing to the reduce.
INSTANTIATE_TEST_SUITE_P(Models, DataParallelReplicas,
                         ::testing::Values(ReplicaCase{"mlp", 2, 12}, ReplicaCase{"mlp", 3, 12},
                                           ReplicaCase{"mnist-cnn", 2, 12}, ReplicaCase{"mnist-cnn", 3, 12},
                                           ReplicaCase{"mnist-cnn", 3, 2}),
                         [](const auto& info) {
                           std::string name = std::string(info.param.model) + "_" + std::to_string(info.param.replicas) +
                                              "replicas_batch" + std::to_string(info.param.batch);
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

TEST(DataParallelReplicasBatchNorm, NormaliseEachSliceAndKeepReplicaZerosRunningStatistics) {
  // As nn.DataParallel: each replica's batch norm uses its own slice's statistics; the running
  // statistics that persist are replica 0's, updated from its slice alone.
  const TrainTest data = make_synthetic(SyntheticShape{3, 8, 8, 10}, 32, 8, 5);
  SoloCommunicator comm;
  TrainConfig config = one_process_config("resnet18-cifar", 8);
  config.lr = 0.01;
  config.parallel = Parallel::Dp;
  config.replicas = 2;
  DataParallelEngine dp(std::make_unique<CpuReplicas>(config, data.train, data.test, comm), data.train.size(),
                        data.test.size());
  const std::vector<int64_t> indices = {0, 1, 2, 3, 4, 5, 6, 7};
  dp.train_step(indices, StepInfo{0, 0, 0, config.lr});

  // Replica 0's slice alone through a fresh network in training mode updates the same statistics.
  TrainConfig alone = config;
  alone.parallel = Parallel::Ddp;
  alone.replicas = 1;
  CpuEngine replica0(alone, data.train, data.test, comm);
  const std::vector<float> before = replica0.network().buffers();
  Tensor<float> images;
  std::vector<int32_t> labels;
  assemble_batch(data.train, std::span<const int64_t>(indices).first(4), images, labels);
  replica0.network().forward(images, cpu::Mode::Train);
  const std::vector<float> want = replica0.network().buffers();
  const std::vector<float> got = dp.run_state().save().buffers;
  ASSERT_GT(relative_l2(want, before), 1e-3);
  EXPECT_LT(relative_l2(got, want), 1e-6);

  // The whole batch's statistics would differ: DataParallel is not synchronised batch norm.
  CpuEngine whole(alone, data.train, data.test, comm);
  assemble_batch(data.train, indices, images, labels);
  whole.network().forward(images, cpu::Mode::Train);
  EXPECT_GT(relative_l2(whole.network().buffers(), want), 1e-3);
}

TEST(DataParallelOptions, TheBatchIsPerReplicaUnderWeakScalingAndWholeUnderStrong) {
  TrainConfig c;
  c.parallel = Parallel::Dp;
  c.replicas = 4;
  c.batch_size = 64;
  EXPECT_EQ(c.per_rank_batch(1), 256);
  c.scaling = Scaling::Strong;
  EXPECT_EQ(c.per_rank_batch(1), 64);
  c.batch_size = 66;
  EXPECT_THROW(c.per_rank_batch(1), UserError);
}

TEST(DataParallelOptions, RefusesSeveralRanksAndReplicasWithoutDp) {
  TrainConfig c;
  c.parallel = Parallel::Dp;
  c.replicas = 2;
  try {
    c.per_rank_batch(2);
    FAIL() << "dp on 2 ranks must be refused";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("mpirun -n 1"), std::string::npos) << e.what();
  }
  c.validate();
  c.parallel = Parallel::Ddp;
  try {
    c.validate();
    FAIL() << "--replicas 2 without --parallel dp must be refused";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("--replicas 2 needs --parallel dp"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sb
