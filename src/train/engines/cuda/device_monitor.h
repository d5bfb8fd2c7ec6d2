// What the CUDA engine measures of its GPU beside the training: the GPU's name, the energy it used and
// its clocks (NVML), its measured peak matrix rate in the run's precision (the denominator of MFU) and
// the most device memory in use. The engine trains and times its steps; it hands these readings out
// through EngineMeasurements (train/engines/engine_measurements.h), where the run's observers read them;
// the per-epoch ones are its readings (train/engines/epoch_reading.h), declared in device_monitor.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "metrics/gpu_clocks.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/cuda/gpu_clock_sampler.h"
#include "train/engines/cuda/gpu_energy.h"
#include "train/engines/cuda/nvml_device.h"
#include "train/engines/epoch_reading.h"

namespace sb::cuda {

class DeviceMonitor {
 public:
  // Selects `device` as this thread's current device (the CUDA context's startup part) and starts the
  // energy meter and the clocks' first window.
  explicit DeviceMonitor(int device);

  const std::string& device_name() const { return name_; }
  // The peak rate from the cache folder, else measured (a startup part of its own): once the engine's
  // set-up is done and its stream idle, so that the GEMM has the GPU to itself.
  void measure_peak_rate(DType compute, bool tf32, const std::string& cache_folder);
  // A sample of the memory in use: after the set-up and each evaluation.
  void sample_memory() { peak_memory_.sample(); }
  // After the engine queued its `steps_queued`-th step: the first steps grow the memory in use.
  void step_queued(int64_t steps_queued);

  // Each epoch's energy (summed over the ranks) and peak device memory, in use and allocated (the largest
  // rank's); they read this monitor, which must outlive them.
  std::vector<EpochReading> readings() const;
  double peak_tflops() const { return peak_tflops_; }
  GpuClocks take_clocks() { return clocks_->take(); }

 private:
  int device_;
  std::string name_;
  std::unique_ptr<NvmlDevice> nvml_;
  std::unique_ptr<GpuEnergyMeter> energy_;   // reads nvml_
  std::unique_ptr<GpuClockSampler> clocks_;  // reads nvml_ on a thread of its own
  PeakDeviceMemory peak_memory_;
  double peak_tflops_;
};

}  // namespace sb::cuda
