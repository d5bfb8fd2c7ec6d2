#include "metrics/step_trace.h"

#include <cstdio>
#include <string>

namespace sb {
namespace {
constexpr double kMicrosecondsPerSecond = 1e6;

struct PhaseSpan {
  Phase phase;
  int begin;  // a StepBoundary, or -1 for the step's start
  StepBoundary end;
};
// backward_overlap lies inside backward's span: it is drawn as part of it (see its args).
constexpr PhaseSpan kPhaseSpans[] = {{kPhaseData, -1, kDataEnd},
                                     {kPhaseForward, kDataEnd, kForwardEnd},
                                     {kPhaseBackward, kForwardEnd, kBackwardEnd},
                                     {kPhaseComm, kBackwardEnd, kCommEnd},
                                     {kPhaseOptimizer, kCommEnd, kOptimizerEnd}};
}  // namespace

void name_trace_tracks(ChromeTrace& trace) {
  trace.name_track(kTrackEpochs, "epochs");
  trace.name_track(kTrackStep, "step phases (compute stream)");
  trace.name_track(kTrackAllReduce, "all-reduce (communication stream)");
}

void trace_device_step(ChromeTrace& trace, const StepTimeline& timeline, const double* seconds, double start_us) {
  const auto at_us = [&](double seconds_after_start) { return start_us + seconds_after_start * kMicrosecondsPerSecond; };
  char args[160];
  for (const PhaseSpan& span : kPhaseSpans) {
    const double begin = span.begin < 0 ? 0.0 : timeline.ends[static_cast<size_t>(span.begin)];
    const double end = timeline.ends[span.end];
    std::string phase_args;
    if (span.phase == kPhaseBackward) {
      std::snprintf(args, sizeof args, "{\"backward_overlap_ms\":%.6f,\"backward_ms\":%.6f}",
                    seconds[kPhaseBackwardOverlap] * 1e3, seconds[kPhaseBackward] * 1e3);
      phase_args = args;
    }
    trace.complete(phase_name(span.phase), "step", at_us(begin), (end - begin) * kMicrosecondsPerSecond, kTrackStep, phase_args);
  }
  for (size_t b = 0; b < timeline.buckets.size(); ++b) {
    const BucketSpan& bucket = timeline.buckets[b];
    if (bucket.bytes == 0) continue;  // one rank: nothing went over the wire
    const std::string name = "bucket " + std::to_string(b);
    std::snprintf(args, sizeof args, "{\"bytes\":%lld,\"ready_us\":%.3f}", static_cast<long long>(bucket.bytes), at_us(bucket.ready_s));
    trace.complete(name.c_str(), "allreduce", at_us(bucket.start_s), (bucket.end_s - bucket.start_s) * kMicrosecondsPerSecond,
                   kTrackAllReduce, args);
  }
}

double trace_host_step(ChromeTrace& trace, const double* seconds, double cursor_us) {
  for (int p = 0; p < kPhaseCount; ++p) {
    trace.complete(phase_name(p), "step", cursor_us, seconds[p] * kMicrosecondsPerSecond, kTrackStep);
    cursor_us += seconds[p] * kMicrosecondsPerSecond;
  }
  return cursor_us;
}

}  // namespace sb
