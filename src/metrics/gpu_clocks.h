// A GPU's clocks over a window of time (an epoch's training): the mean SM clock and die temperature of
// samples taken while it ran (a hotter die leaks more of the power budget, so it clocks lower under the
// same cap), and how long the power limit and the temperature held the clocks below the application clocks
// (NVML's violation counters). Under a power cap every card of a node clocks by itself, and a synchronous
// data-parallel step waits for the slowest: these readings tell that loss from the step's own.
// Host logic only; the NVML readings are in train/engines/cuda/gpu_clock_sampler.h.
#pragma once
#include <cstdint>
#include <mutex>
#include <optional>

#include "metrics/not_measured.h"

namespace sb {

struct GpuClocks {
  double window_s = kNotMeasured;           // the window's length
  double sm_clock_mhz = kNotMeasured;       // mean of the SM clock samples in the window
  double temperature_c = kNotMeasured;      // mean of the die temperature samples in the window
  double power_limited_s = kNotMeasured;    // time the power limit held the clocks down in the window
  double thermal_limited_s = kNotMeasured;  // time the temperature held them down

  // The limited times as fractions of the window, at most 1 (NaN where not measured).
  double power_limited_fraction() const { return fraction_of_window(power_limited_s); }
  double thermal_limited_fraction() const { return fraction_of_window(thermal_limited_s); }

 private:
  double fraction_of_window(double seconds) const;
};

// The mean of clock samples added by a sampling thread and taken, restarting it, by another.
class ClockSampleMean {
 public:
  void add(double mhz);
  // The mean of the samples since the last take (NaN when none arrived); starts a new window.
  double take();

 private:
  std::mutex mutex_;
  double sum_ = 0;
  int64_t count_ = 0;
};

// The growth of a cumulative nanosecond counter between successive reads, in seconds: NaN for the first
// read, after a failed read, or where the counter went back (the driver reset it).
class CounterGrowth {
 public:
  double take_seconds(std::optional<uint64_t> now_ns);

 private:
  std::optional<uint64_t> last_ns_;
};

}  // namespace sb
