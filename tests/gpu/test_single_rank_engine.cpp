// The CUDA engine on one rank: nothing to average, so no NCCL communicator, no gradient buckets and no
// NCCL call (its start-up has no nccl part), while training, evaluation, the peak rate and the per-epoch
// readings (energy, peak memory) work as on several ranks. Runs without MPI (a communicator of one rank)
// and skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "core/startup_clock.h"
#include "data/synthetic.h"
#include "gpu_test_util.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/reporting/epoch_readings_observer.h"
#include "unit/solo_communicator.h"

namespace sb {
namespace {

TEST(SingleRankCudaEngine, TrainsWithoutANcclCommunicator) {
  SKIP_WITHOUT_GPU();
  reset_startup_times();
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 256, 64, 3);
  TrainConfig config;
  config.model = "mnist-cnn";
  config.device = Device::Cuda;
  config.batch_size = 32;
  config.lr = 0.01;
  config.plan_cache = "";  // nothing read or written outside the test
  testing::SoloCommunicator comm;
  auto engine = make_cuda_engine(config, data.train, data.test, comm, 0, 1);
  EXPECT_TRUE(std::isnan(startup_seconds(StartupPart::nccl))) << "one rank created an NCCL communicator";
  EXPECT_TRUE(std::isfinite(startup_seconds(StartupPart::peak_gemm)));
  EXPECT_GT(engine->measurements().peak_tflops(), 0.0);

  // The engine's per-epoch readings, as the run's observer takes them around the steps and evaluation.
  EpochReadingsObserver readings(comm, engine->measurements().readings());
  readings.on_run_start(RunStart{config, config.batch_size, data.train.size(), data.test.size(), TrainClock::now()});

  const std::vector<float> initial = engine->run_state().save().params;
  std::vector<int64_t> indices(static_cast<size_t>(data.train.size()));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  const int steps = 4;
  for (int k = 0; k < steps; ++k) {
    const std::span<const int64_t> batch(indices.data() + k * config.batch_size, static_cast<size_t>(config.batch_size));
    engine->train_step(batch, StepInfo{0, k, static_cast<uint64_t>(k * config.batch_size), config.lr});
  }
  engine->synchronize();
  const EvalTotals train = engine->train_totals(TotalsRead::Take);
  EXPECT_EQ(train.count, steps * config.batch_size);
  EXPECT_TRUE(std::isfinite(train.loss_sum) && train.loss_sum > 0) << train.loss_sum;
  const std::vector<float> trained = engine->run_state().save().params;
  ASSERT_EQ(trained.size(), initial.size());
  EXPECT_NE(trained, initial) << "the optimizer did not move the weights";

  std::vector<int64_t> test_indices(static_cast<size_t>(data.test.size()));
  std::iota(test_indices.begin(), test_indices.end(), int64_t{0});
  const EvalTotals test = engine->evaluate(test_indices);
  EXPECT_EQ(test.count, data.test.size());
  EXPECT_TRUE(std::isfinite(test.loss_sum) && test.loss_sum > 0) << test.loss_sum;
  EXPECT_GE(test.correct, 0);
  EXPECT_LE(test.correct, test.count);

  EpochSummary epoch;
  readings.measure_epoch(epoch);
  const EpochRow& row = epoch.measured;
  EXPECT_GT(row.peak_allocated_bytes, 0) << "the engine's own buffers were not counted";
  EXPECT_GT(row.peak_memory_bytes, 0) << "the memory in use was not sampled";
  EXPECT_TRUE(std::isnan(row.energy_j) || row.energy_j > 0) << "energy " << row.energy_j << " J";  // NaN: no NVML counter
  reset_startup_times();
}

}  // namespace
}  // namespace sb
