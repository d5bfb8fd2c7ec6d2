// An epoch's GPU clocks over every GPU of every rank (metrics/gpu_clocks.h; a rank drives one GPU, or
// several under --parallel dp): the slowest and fastest GPU's mean SM clock, the coolest and hottest GPU's
// mean temperature, and the largest share of the epoch that the power limit or the temperature held any
// GPU's clocks down. GPUs that measured nothing (no NVML) and ranks with none (the CPU engine) are left
// out; NaN where none measured.
#pragma once
#include <span>

#include "comm/communicator.h"
#include "metrics/gpu_clocks.h"
#include "metrics/not_measured.h"

namespace sb {

struct EpochClocks {
  double sm_clock_min_mhz = kNotMeasured;
  double sm_clock_max_mhz = kNotMeasured;
  double temperature_min_c = kNotMeasured;  // the coolest rank's mean die temperature
  double temperature_max_c = kNotMeasured;  // the hottest rank's
  double power_limited_fraction = kNotMeasured;    // max over ranks
  double thermal_limited_fraction = kNotMeasured;  // max over ranks
};

// Collective over comm: `mine` are this rank's GPUs' windows.
EpochClocks reduce_epoch_clocks(Communicator& comm, std::span<const GpuClocks> mine);

}  // namespace sb
