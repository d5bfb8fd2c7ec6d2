// The CPU engine times its own wait in the check before the gradient all-reduce (PhaseTimes::check_s),
// the collective at which every rank waits for the last to arrive, and the arrivals observer takes it into
// each sampled step's collectives. Under mpiexec with 1, 2 and 4 ranks; what is asserted are the
// measurements' order, not their size.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "comm/mpi_communicator.h"
#include "data/synthetic.h"
#include "train/engines/cpu_engine.h"
#include "train/loop/trainer.h"

namespace sb {
namespace {

TrainConfig small_mlp() {
  TrainConfig config;
  config.model = "mlp";
  config.epochs = 1;
  config.batch_size = 8;
  config.eval_batch_size = 8;
  return config;
}

TEST(CpuEngineCheck, EachStepTimesItsCheckWithinTheStep) {
  auto world = MpiCommunicator::world();
  const TrainTest data = make_synthetic(SyntheticShape{1, 8, 8, 4}, 32 * world->size(), 8, 5);
  const TrainConfig config = small_mlp();
  CpuEngine engine(config, data.train, data.test, *world);
  std::vector<int64_t> batch;
  for (int64_t i = 0; i < 8; ++i) batch.push_back(i + 8 * world->rank());
  for (int step = 0; step < 3; ++step) {
    const auto start = std::chrono::steady_clock::now();
    const PhaseTimes t = engine.train_step(batch, StepInfo{0, step, 0, 0.01});
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(std::isfinite(t.check_s)) << "step " << step;
    EXPECT_GE(t.check_s, 0.0);
    EXPECT_GE(t.arrival_s, t.seconds[kPhaseData] + t.seconds[kPhaseForward] + t.seconds[kPhaseBackward]);
    // The arrival, the check, the all-reduce and the update follow each other inside the call.
    EXPECT_LE(t.arrival_s + t.check_s + t.seconds[kPhaseComm] + t.seconds[kPhaseOptimizer], wall_s);
  }
}

TEST(CpuEngineCheck, TheSampledStepsHoldTheCheckAndTheStopCheck) {
  auto world = MpiCommunicator::world();
  const TrainTest data = make_synthetic(SyntheticShape{1, 8, 8, 4}, 32 * world->size(), 8, 6);
  const TrainConfig config = small_mlp();
  CpuEngine engine(config, data.train, data.test, *world);
  const RunSummary run = train({config, *world, engine});
  ASSERT_EQ(run.epochs.size(), 1u);
  if (world->rank() != 0) return;  // the root holds every rank's samples
  const EpochSummary& e = run.epochs[0];
  ASSERT_TRUE(e.arrivals.measured());
  ASSERT_EQ(e.arrivals.samples.size(), static_cast<size_t>(4 * world->size()));  // 4 steps a rank, all sampled
  for (const StepArrival& a : e.arrivals.samples) {
    EXPECT_TRUE(std::isfinite(a.collectives_s));
    EXPECT_GT(a.collectives_s, 0.0);  // two collectives, each one a call into MPI
    EXPECT_LT(a.collectives_s, e.wall_max);
  }
}

}  // namespace
}  // namespace sb
