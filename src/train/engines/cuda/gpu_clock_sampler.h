// Samples one GPU's SM clock and temperature through NVML on a thread of its own, every kSampleInterval, and reads the
// power and thermal violation counters when a window is taken (metrics/gpu_clocks.h). Nothing is sampled
// where NVML or the device's clock reading is missing: every window then reads NaN.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "metrics/gpu_clocks.h"
#include "train/engines/cuda/nvml_device.h"

namespace sb {

class GpuClockSampler {
 public:
  // A sample every 10 ms: about 100 in a second-long epoch, while an NVML reading costs microseconds of a
  // host thread that the training loop does not wait for.
  static constexpr std::chrono::milliseconds kSampleInterval{10};

  explicit GpuClockSampler(const NvmlDevice& device);  // starts the first window
  ~GpuClockSampler();
  GpuClockSampler(const GpuClockSampler&) = delete;
  GpuClockSampler& operator=(const GpuClockSampler&) = delete;

  // The window since the last take (or since construction), and a new one from now.
  GpuClocks take();

 private:
  void sample_until_stopped();

  const NvmlDevice& device_;
  ClockSampleMean sm_clock_;
  ClockSampleMean temperature_;
  CounterGrowth power_;
  CounterGrowth thermal_;
  std::chrono::steady_clock::time_point window_start_;
  std::mutex stop_mutex_;
  std::condition_variable stop_signal_;
  bool stop_ = false;
  std::thread thread_;  // last: started once everything above is ready
};

}  // namespace sb
