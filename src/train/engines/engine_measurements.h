// What an engine measures besides the training itself: the step times it reports late, its per-epoch
// readings (energy, peak memory: epoch_reading.h), its device's peak matrix rate and clocks. The run's
// observers read them (train/run/train_observer.h); the training interface (train/engines/engine.h)
// hands them out through Engine::measurements(). Every reading has a default for an engine that does
// not measure it.
#pragma once
#include <limits>
#include <optional>
#include <vector>

#include "data/input_counters.h"
#include "metrics/gpu_clocks.h"
#include "train/engines/epoch_reading.h"
#include "train/engines/phase_times.h"

namespace sb {

class EngineMeasurements {
 public:
  virtual ~EngineMeasurements() = default;

  // After Engine::synchronize(): the times of a step not yet reported by train_step (see PhaseTimes::valid).
  virtual PhaseTimes drain_step_times() {
    PhaseTimes none;
    none.valid = false;
    return none;
  }
  // The figures it measures for each epoch's row of the results file, each with its column; their read
  // functions use the engine's parts and so live as long as the engine. Every rank's engine is of one
  // kind and gives the same list; where the engine gives none, the columns keep "not measured".
  virtual std::vector<EpochReading> readings() { return {}; }
  // The device's measured matrix rate in the run's precision, TFLOP/s (NaN where not measured): the
  // denominator of MFU.
  virtual double peak_tflops() const { return std::numeric_limits<double>::quiet_NaN(); }
  // The clocks since the last call (metrics/gpu_clocks.h) of each GPU this rank drives (one, or every
  // replica's under --parallel dp), starting a new window; none for the CPU, NaN readings where they
  // can't be measured.
  virtual std::vector<GpuClocks> take_gpu_clocks() { return {}; }
  // Image files: what the input pipeline has done since the engine was created; nullopt for data in memory.
  virtual std::optional<InputTotals> input_totals() const { return std::nullopt; }
};

}  // namespace sb
