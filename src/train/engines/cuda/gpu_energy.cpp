#include "train/engines/cuda/gpu_energy.h"

#include <limits>

namespace sb {

double GpuEnergyMeter::joules() const {
  const std::optional<uint64_t> now_mj = device_.energy_mj();
  if (!start_mj_ || !now_mj) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(*now_mj - *start_mj_) * 1e-3;
}

}  // namespace sb
