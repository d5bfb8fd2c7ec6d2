// A training step in the Chrome trace: its phases on the compute-stream track and its gradient buckets'
// all-reduces on the communication track, at their real times where the engine has a device timeline,
// else laid end to end from a cursor (host-timed phases: the CPU engine).
#pragma once
#include "metrics/chrome_trace.h"
#include "metrics/step_timeline.h"

namespace sb {

enum TraceTrack { kTrackEpochs = 0, kTrackStep = 1, kTrackAllReduce = 2 };

// Names the tracks above.
void name_trace_tracks(ChromeTrace& trace);

// The step of `timeline` starting at `start_us` (the run's clock): its phases of `seconds` (by Phase) at
// the timeline's boundaries, backward as one span whose args give its overlapped part, and each bucket
// that exchanged bytes on the all-reduce track, named "bucket <b>", with its bytes and ready time.
void trace_device_step(ChromeTrace& trace, const StepTimeline& timeline, const double* seconds, double start_us);

// Host-timed phases of `seconds` end to end from `cursor_us`; returns the cursor after them.
double trace_host_step(ChromeTrace& trace, const double* seconds, double cursor_us);

}  // namespace sb
