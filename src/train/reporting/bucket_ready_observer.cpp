#include "train/reporting/bucket_ready_observer.h"

#include <span>
#include <vector>

namespace sb {
namespace {

// Without the warm-up the first steps of a process are not steady: the eager ones grow the layers'
// buffers, the third captures the CUDA graphs. Bucket ready times are summarised over the steps after
// them either way (after a warm-up, three steps of hundreds).
constexpr int64_t kUnsteadySteps = 3;

// Each bucket's ready time, the slowest rank's; empty unless every rank has the same buckets timed.
std::vector<double> slowest_bucket_ready(Communicator& comm, std::vector<double> local) {
  const int64_t n = static_cast<int64_t>(local.size());
  int64_t counts[2] = {n, -n};  // max of both: the largest and the smallest count
  comm.allreduce_max(std::span<int64_t>(counts));
  if (counts[0] != -counts[1] || n == 0) return {};
  comm.allreduce_max(std::span<double>(local));
  return local;
}

}  // namespace

void BucketReadyObserver::on_step_times(const PhaseTimes& t) {
  if (++steps_timed_ > kUnsteadySteps) samples_.add(ready_after_backward_start(t.timeline));
}

void BucketReadyObserver::measure_epoch(EpochSummary& s) { s.bucket_ready_s = slowest_bucket_ready(comm_, samples_.medians()); }

}  // namespace sb
