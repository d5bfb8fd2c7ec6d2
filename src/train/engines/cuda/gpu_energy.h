// The GPU's energy counter through NVML (train/engines/cuda/nvml_device.h): NaN where NVML or the counter is
// missing.
#pragma once
#include <cstdint>
#include <optional>

#include "train/engines/cuda/nvml_device.h"

namespace sb {

class GpuEnergyMeter {
 public:
  explicit GpuEnergyMeter(const NvmlDevice& device) : device_(device), start_mj_(device.energy_mj()) {}

  // Joules since the meter was created; NaN when NVML or the counter (Volta and later) is missing.
  double joules() const;

 private:
  const NvmlDevice& device_;
  std::optional<uint64_t> start_mj_;
};

}  // namespace sb
