// The trainer's use of the engine's clock windows (EngineMeasurements::take_gpu_clocks): one window starts when an
// epoch's training starts and ends after its last step, so what the GPU did between epochs (evaluation,
// the results file) is left out, and each epoch's row holds the ranks' slowest and fastest clock, coolest
// and hottest temperature and most limited share. On the CPU engine, wrapped by one that makes up
// readings, under mpiexec with 1, 2 and 4 ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "comm/mpi_communicator.h"
#include "data/synthetic.h"
#include "train/engines/cpu_engine.h"
#include "train/loop/trainer.h"
#include "train/reporting/clocks_line.h"

namespace sb {
namespace {

// Readings that say which window they close: a window holding training steps reads as epoch k of rank
// r (clock 1000 + 100 r + k MHz, temperature 50 + r C, power-limited for r / 8 of a 2 s window); a window
// without steps reads absurdly, so that a row made from one shows it.
class ClockedEngine final : public Engine, private EngineRunState, private EngineMeasurements {
 public:
  ClockedEngine(CpuEngine& engine, int rank) : engine_(engine), rank_(rank) {}
  EngineFacts describe() const override { return engine_.describe(); }
  PhaseTimes train_step(std::span<const int64_t> indices, const StepInfo& info) override {
    ++steps_in_window_;
    return engine_.train_step(indices, info);
  }
  EvalTotals train_totals(TotalsRead read) override { return engine_.train_totals(read); }
  EvalTotals evaluate(std::span<const int64_t> indices) override {
    steps_in_window_ = -1000000;  // an evaluation inside the window would leave it without a count of steps
    return engine_.evaluate(indices);
  }
  EngineRunState& run_state() override { return *this; }
  EngineState save() override { return engine_.run_state().save(); }
  void load(const EngineState& state) override { engine_.run_state().load(state); }
  EngineMeasurements& measurements() override { return *this; }
  std::vector<GpuClocks> take_gpu_clocks() override {
    GpuClocks c;
    c.window_s = 2.0;
    if (steps_in_window_ > 0) {
      c.sm_clock_mhz = 1000.0 + 100.0 * rank_ + training_windows_;
      c.temperature_c = 50.0 + rank_;
      c.power_limited_s = 0.25 * rank_;
      c.thermal_limited_s = 0;
      ++training_windows_;
    } else {
      c.sm_clock_mhz = 99999.0;
      c.temperature_c = 999.0;
      c.power_limited_s = 2.0;
    }
    ++takes;
    steps_in_window_ = 0;
    return {c};
  }

  int takes = 0;

 private:
  CpuEngine& engine_;
  int rank_;
  int steps_in_window_ = 0;
  int training_windows_ = 0;
};

TEST(TrainerClocks, EachEpochRowHoldsItsTrainingWindowAcrossRanks) {
  auto world = MpiCommunicator::world();
  const int last = world->size() - 1;
  const TrainTest data = make_synthetic(SyntheticShape{1, 8, 8, 4}, 24 * world->size(), 16, 3);
  TrainConfig config;
  config.model = "mlp";
  config.epochs = 3;
  config.batch_size = 8;
  config.eval_batch_size = 8;
  config.lr = 0.05;
  CpuEngine cpu(config, data.train, data.test, *world);
  ClockedEngine engine(cpu, world->rank());
  const RunSummary run = train({config, *world, engine});
  ASSERT_EQ(run.epochs.size(), 3u);
  EXPECT_EQ(engine.takes, 6) << "one window per epoch, opened and closed";
  for (int e = 0; e < 3; ++e) {
    const EpochClocks& c = run.epochs[static_cast<size_t>(e)].clocks;
    EXPECT_DOUBLE_EQ(c.sm_clock_min_mhz, 1000.0 + e) << "epoch " << e + 1;
    EXPECT_DOUBLE_EQ(c.sm_clock_max_mhz, 1000.0 + 100.0 * last + e) << "epoch " << e + 1;
    EXPECT_DOUBLE_EQ(c.temperature_min_c, 50.0) << "epoch " << e + 1;
    EXPECT_DOUBLE_EQ(c.temperature_max_c, 50.0 + last) << "epoch " << e + 1;
    EXPECT_DOUBLE_EQ(c.power_limited_fraction, 0.125 * last) << "epoch " << e + 1;
    EXPECT_DOUBLE_EQ(c.thermal_limited_fraction, 0.0) << "epoch " << e + 1;
  }
}

TEST(TrainerClocks, TheCpuEngineMeasuresNone) {
  auto world = MpiCommunicator::world();
  const TrainTest data = make_synthetic(SyntheticShape{1, 8, 8, 4}, 16 * world->size(), 8, 4);
  TrainConfig config;
  config.model = "mlp";
  config.epochs = 1;
  config.batch_size = 8;
  CpuEngine cpu(config, data.train, data.test, *world);
  const RunSummary run = train({config, *world, cpu});
  ASSERT_EQ(run.epochs.size(), 1u);
  const EpochClocks& c = run.epochs[0].clocks;
  EXPECT_TRUE(std::isnan(c.sm_clock_min_mhz));
  EXPECT_TRUE(std::isnan(c.sm_clock_max_mhz));
  EXPECT_TRUE(std::isnan(c.temperature_max_c));
  EXPECT_TRUE(std::isnan(c.power_limited_fraction));
  EXPECT_TRUE(std::isnan(c.thermal_limited_fraction));
  EXPECT_EQ(clocks_line(c), "");
}

}  // namespace
}  // namespace sb
