// The CUDA engine times its own start-up parts (core/startup_clock.h): the CUDA context, the network, NCCL,
// the upload of the data set and the peak GEMM measurement while it is built, and the step's graph
// capture in the first steps; a short run then reports them all, each the slowest rank's. Runs under
// mpiexec -np 2 and skips unless every rank has a GPU of its own.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "comm/mpi_communicator.h"
#include "core/startup_clock.h"
#include "data/synthetic.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"
#include "train/loop/trainer.h"
#include "train/reporting/startup_report.h"

namespace sb {
namespace {

TEST(GpuStartupParts, TheCudaEngineTimesItsPartsAndTheRunReportsThem) {
  auto world = MpiCommunicator::world();
  if (world->allreduce_min(visible_gpu_count()) < world->size()) GTEST_SKIP() << "needs one GPU per rank";
  reset_startup_times();
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 512, 64, 5);
  TrainConfig config;
  config.model = "mnist-cnn";
  config.device = Device::Cuda;
  config.batch_size = 16;  // per rank: 16 steps per epoch on 2 ranks, enough for the graph capture
  config.cuda_graph = true;
  config.plan_cache = "";  // no on-disk plan cache: the first step builds its plans
  config.epochs = 1;
  auto engine = make_cuda_engine(config, data.train, data.test, *world, world->rank(), world->size());
  for (StartupPart part : {StartupPart::cuda_context, StartupPart::network, StartupPart::nccl, StartupPart::upload,
                           StartupPart::peak_gemm}) {
    const double seconds = startup_seconds(part);
    if (part == StartupPart::nccl && world->size() == 1) {
      EXPECT_TRUE(std::isnan(seconds)) << "one rank creates no NCCL communicator, yet nccl took " << seconds;
      continue;
    }
    EXPECT_TRUE(std::isfinite(seconds) && seconds >= 0.0) << startup_parts()[static_cast<size_t>(part)].name << " " << seconds;
  }
  EXPECT_TRUE(std::isnan(seconds_to_first_step()));

  const RunSummary run = train({config, *world, *engine});
  ASSERT_EQ(run.epochs_run, 1);
  EXPECT_GT(startup_seconds(StartupPart::first_step), 0.0);
  EXPECT_GT(startup_seconds(StartupPart::graph_capture), 0.0);  // captured after two eager steps
  const StartupReport report = gather_startup(*world);
  EXPECT_GT(report.to_first_step, report.seconds[static_cast<size_t>(StartupPart::first_step)]);
  const std::string line = startup_line(report);
  for (const char* part : {"cuda_context", "network", "upload", "peak_gemm", "first_step", "after it: graph_capture"})
    EXPECT_NE(line.find(part), std::string::npos) << part << " missing from: " << line;
  EXPECT_EQ(line.find(" nccl ") != std::string::npos, world->size() > 1) << line;
  reset_startup_times();
}

}  // namespace
}  // namespace sb
