// The warm-up before the training clock (train/loop/warm_up.h) changes nothing of the training: a run with it
// and a run without it have the same losses, accuracies, parameters and BN statistics, bit for bit, on
// the CPU engine with dropout, BN, momentum, a step schedule, augmentation and a short last step. Runs
// under mpiexec with 1, 2 and 4 ranks (the warm-up's steps all-reduce).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm/mpi_communicator.h"
#include "core/startup_clock.h"
#include "data/synthetic.h"
#include "train/engines/cpu_engine.h"
#include "train/loop/trainer.h"
#include "train/loop/warm_up.h"

namespace sb {
namespace {

// Counts what the trainer asks of the CPU engine, so that a test knows the warm-up really ran steps.
class CountingEngine final : public Engine, private EngineRunState {
 public:
  explicit CountingEngine(CpuEngine& engine) : engine_(engine) {}
  EngineFacts describe() const override {
    EngineFacts facts = engine_.describe();
    facts.warm_up_steps = 2;
    return facts;
  }
  PhaseTimes train_step(std::span<const int64_t> indices, const StepInfo& info) override {
    ++steps;
    return engine_.train_step(indices, info);
  }
  EvalTotals train_totals(TotalsRead read) override { return engine_.train_totals(read); }
  EvalTotals evaluate(std::span<const int64_t> indices) override {
    ++evaluations;
    return engine_.evaluate(indices);
  }
  EngineRunState& run_state() override { return *this; }

  int steps = 0, evaluations = 0, loads = 0;

 private:
  EngineState save() override { return engine_.run_state().save(); }
  void load(const EngineState& state) override {
    ++loads;
    engine_.run_state().load(state);
  }
  std::mutex* update_mutex() override { return engine_.run_state().update_mutex(); }
  EngineState save_model() override { return engine_.run_state().save_model(); }
  EngineState save_running() override { return engine_.run_state().save_running(); }

  CpuEngine& engine_;
};

struct Outcome {
  RunSummary run;
  std::vector<float> params, buffers;
  int steps = 0, evaluations = 0, loads = 0;
  double warm_up_seconds = 0;
};

Outcome train_once(TrainConfig config, bool warm_up, const TrainTest& data, Communicator& comm) {
  config.untimed_init = warm_up;
  reset_startup_times();
  CpuEngine cpu(config, data.train, data.test, comm);
  CountingEngine engine(cpu);
  Outcome o;
  o.run = train({config, comm, engine});
  o.params = cpu.network().params();
  o.buffers = cpu.network().buffers();
  o.steps = engine.steps;
  o.evaluations = engine.evaluations;
  o.loads = engine.loads;
  o.warm_up_seconds = startup_seconds(StartupPart::warm_up);
  reset_startup_times();
  return o;
}

void expect_same_training(const TrainConfig& config, const TrainTest& data) {
  auto world = MpiCommunicator::world();
  const Outcome cold = train_once(config, false, data, *world);
  const Outcome warm = train_once(config, true, data, *world);
  EXPECT_TRUE(std::isnan(cold.warm_up_seconds));
  EXPECT_EQ(cold.loads, 0);
  // The warm-up ran: its steps (two full ones and the epoch's short last one) and its evaluation, then
  // one restore of the state before them.
  EXPECT_GT(warm.warm_up_seconds, 0.0);
  EXPECT_EQ(warm.steps, cold.steps + 3);
  EXPECT_EQ(warm.evaluations, cold.evaluations + 1);
  EXPECT_EQ(warm.loads, 1);
  ASSERT_EQ(warm.run.epochs.size(), cold.run.epochs.size());
  ASSERT_EQ(cold.run.epochs.size(), static_cast<size_t>(config.epochs));
  for (size_t e = 0; e < cold.run.epochs.size(); ++e) {
    const EpochSummary& a = cold.run.epochs[e];
    const EpochSummary& b = warm.run.epochs[e];
    EXPECT_EQ(b.train_loss, a.train_loss) << "epoch " << e + 1;
    EXPECT_EQ(b.train_accuracy, a.train_accuracy) << "epoch " << e + 1;
    EXPECT_EQ(b.test_loss, a.test_loss) << "epoch " << e + 1;
    EXPECT_EQ(b.test_accuracy, a.test_accuracy) << "epoch " << e + 1;
    EXPECT_EQ(b.global_samples, a.global_samples) << "epoch " << e + 1;
  }
  EXPECT_EQ(warm.params, cold.params);
  EXPECT_EQ(warm.buffers, cold.buffers);
}

// 44 samples per rank in batches of 8: five full steps and a short one of 4, which the warm-up runs too.
TEST(WarmUp, DropoutMomentumAndAStepScheduleTrainTheSame) {
  auto world = MpiCommunicator::world();
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 44 * world->size(), 30, 5);
  TrainConfig config;
  config.model = "mnist-cnn";
  config.epochs = 2;
  config.batch_size = 8;
  config.eval_batch_size = 16;  // 30 test samples: a full evaluation batch and a short one on one rank
  config.lr = 0.05;
  config.momentum = 0.9;
  config.scheduler = ScheduleKind::Step;
  expect_same_training(config, data);
}

TEST(WarmUp, BatchNormStatisticsAndAugmentationTrainTheSame) {
  auto world = MpiCommunicator::world();
  const TrainTest data = make_synthetic(SyntheticShape{3, 8, 8, 4}, 12 * world->size(), 20, 6);
  TrainConfig config;
  config.model = "resnet18-cifar";
  config.epochs = 2;
  config.batch_size = 5;  // 12 per rank: 5, 5, 2
  config.eval_batch_size = 8;
  config.lr = 0.01;
  config.momentum = 0.9;
  config.weight_decay = 5e-4;
  config.augment = true;
  expect_same_training(config, data);
}

TEST(WarmUp, EvaluatesTheFirstBatchAndTheShortLastOne) {
  const std::vector<int64_t> shard = {3, 7, 11, 15, 19, 23, 27};
  EXPECT_EQ(warm_up_evaluation_indices(shard, 3), (std::vector<int64_t>{3, 7, 11, 27}));
  EXPECT_EQ(warm_up_evaluation_indices(shard, 7), shard);
  EXPECT_EQ(warm_up_evaluation_indices(shard, 100), shard);
  EXPECT_EQ(warm_up_evaluation_indices(std::span<const int64_t>(shard).first(6), 3), (std::vector<int64_t>{3, 7, 11}));
  EXPECT_TRUE(warm_up_evaluation_indices({}, 3).empty());
}

TEST(WarmUp, RunsAShortLastStepThenTheFirstStepAsOftenAsTheEngineNeeds) {
  const std::vector<std::vector<int64_t>> epoch = {{1, 2}, {3, 4}, {5}};
  const auto steps = warm_up_steps(epoch, 3);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(std::vector<int64_t>(steps[0].begin(), steps[0].end()), epoch[2]);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(std::vector<int64_t>(steps[i].begin(), steps[i].end()), epoch[0]);
  EXPECT_EQ(warm_up_steps({{1, 2}, {3, 4}}, 2).size(), 2u);
  EXPECT_TRUE(warm_up_steps({}, 2).empty());
}

}  // namespace
}  // namespace sb
