#include "train/run/epoch_clocks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>

namespace sb {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// A rank without a value offers the reduction's identity; an identity that survives means no rank had one.
double or_identity(double mine, double identity) { return std::isfinite(mine) ? mine : identity; }
double measured(double reduced) { return std::isfinite(reduced) ? reduced : kNotMeasured; }

}  // namespace

EpochClocks reduce_epoch_clocks(Communicator& comm, std::span<const GpuClocks> mine) {
  // This rank's GPUs first, then the ranks: the identities stand where nothing was measured.
  std::array<double, 2> least = {kInfinity, kInfinity};
  std::array<double, 4> most = {-kInfinity, -kInfinity, -kInfinity, -kInfinity};
  for (const GpuClocks& gpu : mine) {
    least[0] = std::min(least[0], or_identity(gpu.sm_clock_mhz, kInfinity));
    least[1] = std::min(least[1], or_identity(gpu.temperature_c, kInfinity));
    most[0] = std::max(most[0], or_identity(gpu.sm_clock_mhz, -kInfinity));
    most[1] = std::max(most[1], or_identity(gpu.temperature_c, -kInfinity));
    most[2] = std::max(most[2], or_identity(gpu.power_limited_fraction(), -kInfinity));
    most[3] = std::max(most[3], or_identity(gpu.thermal_limited_fraction(), -kInfinity));
  }
  comm.allreduce_min(std::span<double>(least));
  comm.allreduce_max(std::span<double>(most));
  EpochClocks c;
  c.sm_clock_min_mhz = measured(least[0]);
  c.temperature_min_c = measured(least[1]);
  c.sm_clock_max_mhz = measured(most[0]);
  c.temperature_max_c = measured(most[1]);
  c.power_limited_fraction = measured(most[2]);
  c.thermal_limited_fraction = measured(most[3]);
  return c;
}

}  // namespace sb
