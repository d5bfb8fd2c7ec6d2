// One training step's phase times, as an engine reports them (train/engines/engine.h).
#pragma once
#include <cmath>

#include "metrics/step_phases.h"
#include "metrics/step_timeline.h"

namespace sb {

struct PhaseTimes {
  double seconds[kPhaseCount] = {};  // by Phase (metrics/step_phases.h)
  // False for "no step finished yet": an engine that times on the device reports each step one call
  // later (it never waits for the step it just queued) and hands the last one over in
  // EngineMeasurements::drain_step_times.
  bool valid = true;
  // True when a stop signal abandoned the step before its update: the model is as after the last step.
  bool abandoned = false;
  // Seconds from the step's start to this rank's arrival at the gradient collective, on the rank's own
  // clock (train/run/straggler.h): the host's on the CPU, the device's from the step timeline on the GPU
  // (cuda/step_timer.h); NaN where the engine does not measure it. Not summed by operator+=.
  double arrival_s = NAN;
  // Seconds in the check of whether any rank abandoned its step, the gradient exchange's first collective,
  // where the rank waits for the last to arrive (waits included); NaN where the engine does not time it.
  // Not summed by operator+=.
  double check_s = NAN;
  // Where the step ran on the device (for the trace and the buckets' ready times); an engine without
  // device events leaves it empty (StepTimeline::on_device() false). Not summed by operator+=.
  StepTimeline timeline;
  double total() const {
    double t = 0;
    for (double s : seconds) t += s;
    return t;
  }
  PhaseTimes& operator+=(const PhaseTimes& o) {
    for (int i = 0; i < kPhaseCount; ++i) seconds[i] += o.seconds[i];
    return *this;
  }
};

}  // namespace sb
