// The CUDA engine asks, before every replay of its step graphs, whether any device buffer has been
// allocated since their capture (train/engines/cuda/step_graphs.h, StepGraphs::stale): an allocation made by a
// path the engine knows nothing of makes the next full step capture the graphs again, and the training
// goes on as eager steps train. One rank (no MPI), deterministic fp32, dropout on; skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "core/startup_clock.h"
#include "data/synthetic.h"
#include "gpu_test_util.h"
#include "nn/cuda/device_buffer.h"
#include "relative_l2.h"
#include "train/engines/cuda/cuda_engine.h"
#include "unit/solo_communicator.h"

namespace sb {
namespace {

constexpr int kSteps = 8;
constexpr int kAllocateBeforeStep = 5;  // after the capture (step 2) and two replays

struct TrainedRun {
  std::vector<float> params;
  std::vector<double> capture_seconds;  // the graph_capture start-up part after each step
};

TrainedRun train(TrainConfig config, bool cuda_graph, const TrainTest& data) {
  config.cuda_graph = cuda_graph;
  reset_startup_times();
  testing::SoloCommunicator comm;
  auto engine = make_cuda_engine(config, data.train, data.test, comm, 0, 1);
  std::vector<int64_t> indices(static_cast<size_t>(data.train.size()));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  cuda::DeviceBuffer elsewhere;
  TrainedRun run;
  for (int k = 0; k < kSteps; ++k) {
    if (k == kAllocateBeforeStep) elsewhere.ensure(size_t{1} << 20);
    const std::span<const int64_t> batch(indices.data() + k * config.batch_size, static_cast<size_t>(config.batch_size));
    engine->train_step(batch, StepInfo{0, k, static_cast<uint64_t>(k * config.batch_size), config.lr});
    run.capture_seconds.push_back(startup_seconds(StartupPart::graph_capture));
  }
  run.params = engine->run_state().save().params;
  reset_startup_times();
  return run;
}

TEST(EngineGraphRecapture, AnAllocationAnywhereMakesTheNextStepCaptureAgain) {
  SKIP_WITHOUT_GPU();
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 32 * kSteps, 64, 3);
  TrainConfig config;
  config.model = "mnist-cnn";  // dropout: masks keyed by the step in device memory
  config.device = Device::Cuda;
  config.precision = Precision::FP32;
  config.deterministic = true;
  config.autotune = false;
  config.plan_cache = "";  // nothing read or written outside the test
  config.batch_size = 32;
  config.lr = 0.01;
  config.seed = 4;
  const TrainedRun graph = train(config, true, data);
  const TrainedRun eager = train(config, false, data);

  const std::vector<double>& c = graph.capture_seconds;
  ASSERT_EQ(c.size(), static_cast<size_t>(kSteps));
  EXPECT_TRUE(std::isnan(c[1])) << "two eager steps come before the first capture";
  ASSERT_GT(c[2], 0.0) << "the third step captures the graphs";
  for (int k = 3; k < kAllocateBeforeStep; ++k) EXPECT_EQ(c[k], c[2]) << "step " << k << " replays";
  EXPECT_GT(c[kAllocateBeforeStep], c[kAllocateBeforeStep - 1]) << "the allocation made the graphs stale";
  for (int k = kAllocateBeforeStep + 1; k < kSteps; ++k)
    EXPECT_EQ(c[k], c[kAllocateBeforeStep]) << "step " << k << " replays the new graphs";
  ASSERT_EQ(graph.params.size(), eager.params.size());
  EXPECT_LT(testing::relative_l2(graph.params, eager.params), 1e-5) << "the parameters after " << kSteps << " steps";
}

}  // namespace
}  // namespace sb
