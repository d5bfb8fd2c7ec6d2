// The GPU's energy counter through NVML, loaded at run time (dlopen), so that the build needs no NVML
// and a node without it simply reports no energy (NaN).
#pragma once

namespace sb {

class GpuEnergyMeter {
 public:
  // For the CUDA device `device` (matched to NVML by PCI bus id).
  explicit GpuEnergyMeter(int device);
  ~GpuEnergyMeter();
  GpuEnergyMeter(const GpuEnergyMeter&) = delete;
  GpuEnergyMeter& operator=(const GpuEnergyMeter&) = delete;

  // Joules since the meter was created; NaN when NVML or the counter (Volta and later) is missing.
  double joules() const;

 private:
  void* library_ = nullptr;
  void* device_ = nullptr;
  unsigned long long start_mj_ = 0;
};

}  // namespace sb
