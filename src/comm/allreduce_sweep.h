// The collective sweep of `scalebench comm`, in the manner of nccl-tests' all_reduce_perf and its
// siblings: for each collective of --collectives (comm/collective.h, one row each), dtype and size,
// check one call against a known result, then time --iterations of them. This file holds what both
// backends share (sizes, points, the check, the bandwidth formulas, the cross-rank summary) and the CPU
// (MPI) runner; the NCCL runner is comm/cuda/allreduce_sweep_cuda.h.
//
// Each point runs twice, as nccl-tests does: out of place (separate send and receive buffers), then in
// place. Each time one call is checked, then the same call is timed. (Training averages; NCCL's avg
// costs the same as its sum, and MPI has no average at all.) Repeated in-place sums make the values
// grow, which changes nothing in the timing: the check runs on freshly filled buffers first.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "comm/check_pattern.h"
#include "comm/collective.h"
#include "comm/communicator.h"
#include "comm/mpi_communicator.h"
#include "comm/sweep_dtype.h"

namespace sb {

// Every power of two in [min_bytes, max_bytes], ascending. Throws UserError naming --min-bytes and
// --max-bytes when the range is empty or holds no power of two.
std::vector<int64_t> power_of_two_sizes(int64_t min_bytes, int64_t max_bytes);

// nccl-tests' figures. algbw = bytes / time (GB/s, 1 GB = 1e9 bytes), bytes as the collective counts
// them (SweepPoint::bytes). busbw = algbw x the collective's factor: the bandwidth each link must carry,
// comparable across rank counts (an all-reduce's 2(n-1)/n is 0 on 1 rank).
double algbw_gbps(int64_t bytes, double seconds);
double allreduce_busbw_factor(int ranks);
double busbw_gbps(double algbw, int ranks);  // an all-reduce's

// One collective call to measure: `count` elements of `dtype`, the whole array as nccl-tests counts it
// (comm/collective.h).
struct SweepPoint {
  SweepDtype dtype = SweepDtype::Fp32;
  int64_t count = 0;
  bool is_model_size = false;  // the gradient size of --comm-model, not one of the powers of two
  CollectiveKind collective = CollectiveKind::AllReduce;
  int64_t bytes() const { return count * sweep_dtype_bytes(dtype); }
};

// The points of one collective on `ranks` ranks, in run order: for each dtype (in the given order),
// each size as a whole number of elements that the collective carries (Collective::usable_count; sizes
// that carry none are left out), with the model's gradient count (if > 0) slotted in by size.
std::vector<SweepPoint> sweep_points(const Collective& collective, int ranks, const std::vector<int64_t>& sizes_bytes,
                                     const std::vector<SweepDtype>& dtypes, int64_t model_elements);

struct SweepSettings {
  int iterations = 20;         // timed
  int warmup_iterations = 5;   // untimed, after the check
};

// One timed form (out of place or in place), the same on every rank after summarize_timing. As
// nccl-tests reports by default, the headline time is the mean over ranks of each rank's mean per call,
// and algbw and busbw come from it; the slowest rank stands beside it.
struct SweepTiming {
  double time_us_mean = 0;      // per call: each rank's mean over the iterations, then the mean over ranks
  double time_us_min_rank = 0;  // ... the fastest rank's mean
  double time_us_max_rank = 0;  // ... the slowest rank's mean
  double algbw_gbps = 0;        // from time_us_mean
  double busbw_gbps = 0;
  int64_t wrong = 0;            // wrong elements after the checked call, summed over ranks
  int first_wrong_rank = -1;    // the lowest rank with a wrong element; -1 when none
};

// One row of the sweep: both forms of one point.
struct SweepResult {
  SweepPoint point;
  SweepTiming out_of_place;
  SweepTiming in_place;
  int64_t wrong() const { return out_of_place.wrong + in_place.wrong; }
};

// Collective over `comm`: reduces each rank's mean time per call and wrong-element count.
SweepTiming summarize_timing(Communicator& comm, const SweepPoint& point, double my_seconds_per_call, int64_t my_wrong);

// The check, as nccl-tests checks: how many elements of this rank's `result` differ from what
// `collective` must leave there (Collective::expected), for inputs of `pattern`; `to_double` reads one.
template <typename T, typename ToDouble>
int64_t count_wrong(const Collective& collective, const CheckPattern& pattern, int rank, int64_t per_rank,
                    std::span<const T> result, ToDouble to_double) {
  int64_t wrong = 0;
  for (int64_t j = 0; j < static_cast<int64_t>(result.size()); ++j)
    wrong += to_double(result[static_cast<size_t>(j)]) != collective.expected(pattern, rank, per_rank, j);
  return wrong;
}

// Whether `rank` contributes input: every rank, but a rooted collective's root alone.
inline bool sends_input(const Collective& collective, int rank) { return collective.root < 0 || rank == collective.root; }

// The CPU backend: the collective's MPI call (Collective::run_mpi) on host buffers, fp32 and fp64 only.
// Collective over `comm`.
SweepResult run_cpu_collective(MpiCommunicator& comm, const Collective& collective, const SweepPoint& point,
                               const SweepSettings& settings);

}  // namespace sb
