#include "train/engines/cuda/gpu_clock_sampler.h"

namespace sb {

GpuClockSampler::GpuClockSampler(const NvmlDevice& device) : device_(device) {
  power_.take_seconds(device_.limited_ns(ClockLimiter::Power));
  thermal_.take_seconds(device_.limited_ns(ClockLimiter::Thermal));
  window_start_ = std::chrono::steady_clock::now();
  if (device_.sm_clock_mhz()) thread_ = std::thread([this] { sample_until_stopped(); });
}

GpuClockSampler::~GpuClockSampler() {
  {
    const std::lock_guard lock(stop_mutex_);
    stop_ = true;
  }
  stop_signal_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GpuClockSampler::sample_until_stopped() {
  std::unique_lock lock(stop_mutex_);
  while (!stop_signal_.wait_for(lock, kSampleInterval, [this] { return stop_; })) {
    if (const std::optional<unsigned> mhz = device_.sm_clock_mhz()) sm_clock_.add(static_cast<double>(*mhz));
    if (const std::optional<unsigned> celsius = device_.temperature_c()) temperature_.add(static_cast<double>(*celsius));
  }
}

GpuClocks GpuClockSampler::take() {
  const auto now = std::chrono::steady_clock::now();
  GpuClocks clocks;
  clocks.window_s = std::chrono::duration<double>(now - window_start_).count();
  clocks.sm_clock_mhz = sm_clock_.take();
  clocks.temperature_c = temperature_.take();
  clocks.power_limited_s = power_.take_seconds(device_.limited_ns(ClockLimiter::Power));
  clocks.thermal_limited_s = thermal_.take_seconds(device_.limited_ns(ClockLimiter::Thermal));
  window_start_ = now;
  return clocks;
}

}  // namespace sb
