#include "predict/step_timeline.h"

#include <algorithm>

namespace sb::predict {

StepTimeline simulate_step(const StepCompute& compute, const std::vector<BucketComm>& buckets) {
  // Times from the start of backward.
  double stream_free = 0;
  StepTimeline t;
  for (const BucketComm& b : buckets) {
    const double start = std::max(stream_free, b.ready_fraction * compute.backward_s);
    stream_free = start + b.seconds;
    t.comm_s += b.seconds;
  }
  t.exposed_comm_s = std::max(0.0, stream_free - compute.backward_s);
  t.step_s = compute.total() + t.exposed_comm_s;
  return t;
}

}  // namespace sb::predict
