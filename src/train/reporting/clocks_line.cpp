#include "train/reporting/clocks_line.h"

#include <cmath>

#include "train/reporting/progress_line.h"

namespace sb {
namespace {

// "1,635" for one value (or a spread under one unit), "1,635-1,680" for a range.
std::string range_text(double least, double most) {
  return most > least + 0.5 ? with_thousands(least) + "-" + with_thousands(most) : with_thousands(least);
}

}  // namespace

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
