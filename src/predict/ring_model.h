// The ring all-reduce's cost model, t(n, S) = 2(n-1)·alpha + 2(n-1)/n · S/beta, and its fit to a measured
// sweep (docs/prediction.md). alpha is the latency of one of the ring's 2(n-1) steps; beta is the bus
// bandwidth, the figure nccl-tests prints as busbw for large messages.
#pragma once
#include <cstdint>
#include <vector>

namespace sb::predict {

struct RingLevel {
  double alpha_s = 0;                // per ring step
  double beta_bytes_per_s = 0;       // bus bandwidth
};

// Seconds of one all-reduce of `bytes` per rank over `ranks` ranks in a ring; 0 on one rank.
double ring_allreduce_seconds(const RingLevel& level, int64_t ranks, double bytes);

struct TimedSize {
  double bytes = 0;
  double seconds = 0;
};

struct RingFit {
  RingLevel level;
  double worst_relative_error = 0;  // max over the samples of |model - measured| / measured
};

// alpha and beta by least squares over `samples` measured on `ranks` ranks (at least 2), in relative
// error, so that the small sizes (latency) weigh as much as the large ones (bandwidth). A negative
// latency is not physical: the fit then passes through zero latency. Throws std::invalid_argument when
// fewer than two distinct sizes with a positive time are given, or the times do not grow with the size.
RingFit fit_ring(const std::vector<TimedSize>& samples, int64_t ranks);

}  // namespace sb::predict
