// The GPU's NVML readings (train/engines/cuda/nvml_device.h) and the clock sampler and energy meter built on
// them, on a GPU kept busy: the clock lies between 0 and the device's peak clock, the window is as long as
// the time between takes, and the limited time and energy are plausible for it. Skipped without a GPU
// or without NVML.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "gpu_test_util.h"
#include "train/engines/cuda/gpu_clock_sampler.h"
#include "train/engines/cuda/gpu_energy.h"
#include "train/engines/cuda/nvml_device.h"

namespace sb {
namespace {

// Keeps the current device busy with memory writes for about `seconds`.
void keep_busy(double seconds) {
  constexpr size_t kBytes = size_t{1} << 30;
  void* buffer = nullptr;
  ASSERT_CUDA(cudaMalloc(&buffer, kBytes));
  const auto start = std::chrono::steady_clock::now();
  int value = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    for (int i = 0; i < 8; ++i) ASSERT_CUDA(cudaMemsetAsync(buffer, ++value & 0xff, kBytes, nullptr));
    ASSERT_CUDA(cudaDeviceSynchronize());
  }
  ASSERT_CUDA(cudaFree(buffer));
}

double peak_clock_mhz() {
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) != cudaSuccess) return NAN;
  return khz / 1000.0;
}

TEST(GpuClockSampler, BusyWindowReadsPlausibleClocks) {
  SKIP_WITHOUT_GPU();
  ASSERT_CUDA(cudaSetDevice(0));
  const NvmlDevice nvml(0);
  if (!nvml.available()) GTEST_SKIP() << "no NVML on this node";
  const std::optional<unsigned> now = nvml.sm_clock_mhz();
  ASSERT_TRUE(now.has_value()) << "NVML answers but gives no SM clock";
  const double peak = peak_clock_mhz();
  ASSERT_TRUE(std::isfinite(peak) && peak > 0);

  GpuClockSampler sampler(nvml);
  const GpuEnergyMeter energy(nvml);
  const auto start = std::chrono::steady_clock::now();
  keep_busy(0.4);
  const GpuClocks busy = sampler.take();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  EXPECT_GT(busy.window_s, 0.39);
  EXPECT_LE(busy.window_s, elapsed + 0.01) << "the window began when the sampler was made";
  ASSERT_TRUE(std::isfinite(busy.sm_clock_mhz)) << "about 40 samples were due in the window";
  EXPECT_GT(busy.sm_clock_mhz, 0.0);
  EXPECT_LE(busy.sm_clock_mhz, peak * 1.05) << "the device's peak clock is " << peak << " MHz";
  if (nvml.temperature_c()) {
    ASSERT_TRUE(std::isfinite(busy.temperature_c));
    EXPECT_GT(busy.temperature_c, 5.0);
    EXPECT_LT(busy.temperature_c, 110.0);
  }
  if (std::isfinite(busy.power_limited_s)) {
    EXPECT_GE(busy.power_limited_s, 0.0);
    EXPECT_LE(busy.power_limited_fraction(), 1.0);
  }
  if (nvml.energy_mj()) {
    const double joules = energy.joules();
    EXPECT_GT(joules, 0.0) << "0.4 s of memory writes used no energy";
    EXPECT_LT(joules, 2000.0 * elapsed) << "more than 2 kW";
  }

  // The next window starts where this one ended.
  keep_busy(0.1);
  const GpuClocks next = sampler.take();
  EXPECT_GT(next.window_s, 0.09);
  EXPECT_LT(next.window_s, 0.5);
}

}  // namespace
}  // namespace sb
