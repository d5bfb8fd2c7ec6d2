// The value that marks a figure as not measured (no evaluation this epoch, no power sensor, no NVML, ...):
// NaN, never 0, so that no average or ratio takes it for a measurement.
#pragma once
#include <limits>

namespace sb {

inline constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

}  // namespace sb
