#include "train/reporting/epoch_clocks.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>

#include "train/reporting/progress_line.h"

namespace sb {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// A rank without a value offers the reduction's identity; an identity that survives means no rank had one.
double or_identity(double mine, double identity) { return std::isfinite(mine) ? mine : identity; }
double measured(double reduced) { return std::isfinite(reduced) ? reduced : kNotMeasured; }

// "1,635" for one value (or a spread under one unit), "1,635-1,680" for a range.
std::string range_text(double least, double most) {
  return most > least + 0.5 ? with_thousands(least) + "-" + with_thousands(most) : with_thousands(least);
}

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

std::string clocks_line(const EpochClocks& c) {
  std::string parts;
  if (std::isfinite(c.sm_clock_min_mhz)) {
    parts = "SM " + range_text(c.sm_clock_min_mhz, c.sm_clock_max_mhz) + " MHz";
    if (c.sm_clock_max_mhz > c.sm_clock_min_mhz + 0.5) parts += " across GPUs";
  }
  if (std::isfinite(c.temperature_min_c))
    parts += (parts.empty() ? "" : " at ") + range_text(c.temperature_min_c, c.temperature_max_c) + " C";
  const auto percent = [](double f) { return std::to_string(static_cast<int>(std::lround(100.0 * f))) + "%"; };
  std::string limits;
  if (std::isfinite(c.power_limited_fraction)) limits = "the power limit held the clocks down for " + percent(c.power_limited_fraction) + " of it";
  if (std::isfinite(c.thermal_limited_fraction)) {
    limits += limits.empty() ? "temperature held the clocks down for " : ", temperature for ";
    limits += percent(c.thermal_limited_fraction);
    if (!std::isfinite(c.power_limited_fraction)) limits += " of it";
  }
  if (!limits.empty()) limits += " (the most limited GPU)";
  if (parts.empty() && limits.empty()) return "";
  return "GPU clocks in the last epoch: " + parts + (parts.empty() || limits.empty() ? "" : "; ") + limits;
}

}  // namespace sb
