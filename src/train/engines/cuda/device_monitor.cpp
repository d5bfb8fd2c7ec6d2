#include "train/engines/cuda/device_monitor.h"

#include <cuda_runtime.h>

#include <limits>

#include "core/cuda_check.h"
#include "core/startup_clock.h"
#include "train/engines/cuda/device_memory_readings.h"
#include "train/engines/cuda/peak_rate.h"

namespace sb::cuda {
namespace {

// Device memory peaks during the first steps: the eager ones grow the layers' buffers and the third adds
// the captured graphs; after it the footprint stays flat, so sampling stops (a sample costs a driver call).
constexpr int64_t kStepsSampledForPeakMemory = 3;

int selected(int device) {
  StartupSpan context_startup(StartupPart::cuda_context);
  CHECK_CUDA(cudaSetDevice(device));
  return device;
}

}  // namespace

DeviceMonitor::DeviceMonitor(int device)
    : device_(selected(device)),
      name_(gpu_name(device)),
      nvml_(std::make_unique<NvmlDevice>(device)),
      energy_(std::make_unique<GpuEnergyMeter>(*nvml_)),
      clocks_(std::make_unique<GpuClockSampler>(*nvml_)),
      peak_tflops_(std::numeric_limits<double>::quiet_NaN()) {}

void DeviceMonitor::measure_peak_rate(DType compute, bool tf32, const std::string& cache_folder) {
  const StartupSpan peak_startup(StartupPart::peak_gemm);
  peak_tflops_ = peak_gemm_tflops(device_, compute, tf32, cache_folder);
}

void DeviceMonitor::step_queued(int64_t steps_queued) {
  if (steps_queued <= kStepsSampledForPeakMemory) peak_memory_.sample();
}

std::vector<EpochReading> DeviceMonitor::readings() const {
  std::vector<EpochReading> all = device_memory_readings(peak_memory_, device_);
  all.push_back({&EpochRow::energy_j, ReduceOp::Sum, EpochValue::SinceLastEpoch, [this] { return energy_->joules(); }});
  return all;
}

}  // namespace sb::cuda
