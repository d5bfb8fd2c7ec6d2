#include "predict/step_timeline.h"

#include <algorithm>

namespace sb::predict {
namespace {

struct Busy {
  double begin = 0, end = 0;  // an all-reduce on the stream, seconds from the start of backward
};

// The wall time at which backward has done `work` seconds of its work alone, slowed by `slowdown`
// inside the busy intervals (disjoint, in order: one stream).
double time_of_work(double work, const std::vector<Busy>& busy, double slowdown) {
  double t = 0, done = 0;
  for (const Busy& b : busy) {
    if (b.begin > t) {  // alone until the all-reduce starts
      if (done + (b.begin - t) >= work) return t + (work - done);
      done += b.begin - t;
      t = b.begin;
    }
    if (b.end > t) {  // beside it
      const double progress = (b.end - t) / slowdown;
      if (done + progress >= work) return t + (work - done) * slowdown;
      done += progress;
      t = b.end;
    }
  }
  return t + (work - done);
}

}  // namespace

StepTimeline simulate_step(const StepCompute& compute, const std::vector<BucketComm>& buckets, const Overlap& overlap) {
  const double slowdown = 1 + overlap.contention;
  std::vector<Busy> busy;
  double stream_free = 0;
  StepTimeline t;
  for (const BucketComm& b : buckets) {
    // Only the earlier all-reduces can slow backward before this bucket is ready: it starts no earlier.
    const double ready = time_of_work(b.ready_fraction * compute.backward_s, busy, slowdown);
    const double seconds = b.seconds * overlap.comm_scale;
    const double start = std::max(stream_free, ready);
    stream_free = start + seconds;
    busy.push_back({start, stream_free});
    t.comm_s += seconds;
  }
  const double backward_end = time_of_work(compute.backward_s, busy, slowdown);
  t.contention_s = backward_end - compute.backward_s;
  t.exposed_comm_s = std::max(0.0, stream_free - backward_end) + overlap.wait_s;
  t.step_s = compute.total() + t.contention_s + t.exposed_comm_s;
  return t;
}

}  // namespace sb::predict
