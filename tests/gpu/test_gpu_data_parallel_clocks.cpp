// DataParallel's clocks (--parallel dp): one process drives every replica's GPU, and each GPU has its own
// clock window, as a rank of the CUDA engine has one. On every visible GPU up to 2 (one replica where the
// node has one GPU): training steps for a few tenths of a second, then one window per replica with a
// plausible SM clock and temperature, and a new window after it. Skipped without a GPU or without NVML.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "data/sampler.h"
#include "data/synthetic.h"
#include "gpu_test_util.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/cuda/nvml_device.h"
#include "train/engines/dp/cuda/cuda_replicas.h"
#include "train/engines/dp/data_parallel_engine.h"

namespace sb {
namespace {

TEST(GpuDataParallelClocks, EachReplicaHasItsOwnWindow) {
  SKIP_WITHOUT_GPU();
  if (!NvmlDevice(0).available()) GTEST_SKIP() << "no NVML on this node";
  TrainConfig config;
  config.model = "mnist-cnn";
  config.device = Device::Cuda;
  config.parallel = Parallel::Dp;
  config.replicas = std::min(visible_gpu_count(), 2);
  config.scaling = Scaling::Strong;
  config.batch_size = 64;
  const TrainTest data = make_synthetic(SyntheticShape{1, 28, 28, 10}, 1024, 64, 3);
  DataParallelEngine dp(make_cuda_replicas(config, data.train, data.test), data.train.size(), data.test.size());
  dp.measurements().take_gpu_clocks();  // the window starts with the training

  DistributedSampler sampler(data.train.size(), 1, 0, true, config.seed, false);
  const auto batches = split_batches(sampler.indices(0), config.batch_size, false);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t k = 0; std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 0.3; ++k) {
    const auto& batch = batches[static_cast<size_t>(k) % batches.size()];
    dp.train_step(batch, StepInfo{0, k, static_cast<uint64_t>(k) * batch.size(), config.lr});
  }
  dp.synchronize();
  const std::vector<GpuClocks> windows = dp.measurements().take_gpu_clocks();

  ASSERT_EQ(windows.size(), static_cast<size_t>(config.replicas)) << "one window per replica's GPU";
  for (size_t r = 0; r < windows.size(); ++r) {
    EXPECT_GT(windows[r].window_s, 0.29) << "replica " << r;
    ASSERT_TRUE(std::isfinite(windows[r].sm_clock_mhz)) << "replica " << r << ": about 30 samples were due";
    EXPECT_GT(windows[r].sm_clock_mhz, 100.0) << "replica " << r;
    EXPECT_LT(windows[r].sm_clock_mhz, 5000.0) << "replica " << r;
    EXPECT_GT(windows[r].temperature_c, 5.0) << "replica " << r;
    EXPECT_LT(windows[r].temperature_c, 110.0) << "replica " << r;
  }
  // The next window starts at the take: right after it, it is short.
  const std::vector<GpuClocks> next = dp.measurements().take_gpu_clocks();
  ASSERT_EQ(next.size(), windows.size());
  EXPECT_LT(next[0].window_s, 0.1);
}

}  // namespace
}  // namespace sb
