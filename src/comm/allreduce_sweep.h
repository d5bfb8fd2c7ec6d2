// The all-reduce sweep of `scalebench comm`, in the manner of nccl-tests' all_reduce_perf: for each
// dtype and size, check one all-reduce against a known result, then time --iterations of them. This
// file holds what both backends share (sizes, dtypes, the check pattern, the bandwidth formulas, the
// cross-rank summary) and the CPU (MPI) runner; the NCCL runner is comm/cuda/allreduce_sweep_cuda.h.
//
// Each point runs twice, as all_reduce_perf does: out of place (separate send and receive buffers), then
// in place. Each time one sum is checked, then the same sum is timed. (Training averages; NCCL's avg
// costs the same as its sum, and MPI has no average at all.) Repeated in-place sums make the values
// grow, which changes nothing in the timing: the check runs on freshly filled buffers first.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace sb {

// Element types of the sweep. The enum value is the code in the results file's `dtype` column.
enum class SweepDtype { Fp32 = 0, Fp64 = 1, Bf16 = 2, Fp16 = 3 };

const char* sweep_dtype_name(SweepDtype dtype);                // "fp32", "fp64", "bf16", "fp16"
const char* nccl_tests_type_name(SweepDtype dtype);            // all_reduce_perf's `type`: "float", "double", "bfloat16", "half"
int64_t sweep_dtype_bytes(SweepDtype dtype);                   // bytes per element
std::vector<std::string> sweep_dtype_names();                  // every name, indexed by code
std::vector<SweepDtype> parse_sweep_dtypes(const std::vector<std::string>& names);  // UserError naming --dtypes
bool mpi_can_reduce(SweepDtype dtype);                         // MPI has no bf16/fp16 arithmetic

// Every power of two in [min_bytes, max_bytes], ascending. Throws UserError naming --min-bytes and
// --max-bytes when the range is empty or holds no power of two.
std::vector<int64_t> power_of_two_sizes(int64_t min_bytes, int64_t max_bytes);

// nccl-tests' figures. algbw = bytes / time (GB/s, 1 GB = 1e9 bytes). busbw = algbw * 2(n-1)/n: the
// bandwidth each link must carry in a ring all-reduce, comparable across rank counts (0 on 1 rank).
double algbw_gbps(int64_t bytes, double seconds);
double allreduce_busbw_factor(int ranks);
double busbw_gbps(double algbw, int ranks);

// One all-reduce to measure: `count` elements of `dtype`.
struct SweepPoint {
  SweepDtype dtype = SweepDtype::Fp32;
  int64_t count = 0;
  bool is_model_size = false;  // the gradient size of --comm-model, not one of the powers of two
  int64_t bytes() const { return count * sweep_dtype_bytes(dtype); }
};

// The points in run order: for each dtype (in the given order), each size as a whole number of
// elements (sizes below one element are left out), with the model's gradient count (if > 0) slotted
// in by size.
std::vector<SweepPoint> sweep_points(const std::vector<int64_t>& sizes_bytes, const std::vector<SweepDtype>& dtypes,
                                     int64_t model_elements);

// The check data. Rank r holds value(r, i) at element i: small non-negative integers chosen so that
// the sum over all ranks, and every partial sum on the way, is exact in `dtype` (at most 256 in bf16,
// 2048 in fp16). The reduced element i must then equal expected_sum(i) exactly, in any order of
// reduction.
class CheckPattern {
 public:
  CheckPattern(SweepDtype dtype, int ranks);
  double value(int rank, int64_t i) const {
    const int64_t j = (i + rank) % modulus_;
    return one_hot_ ? (j == 0 ? 1.0 : 0.0) : static_cast<double>(j);
  }
  double expected_sum(int64_t i) const { return expected_[static_cast<size_t>(i % modulus_)]; }

 private:
  int64_t modulus_ = 1;
  bool one_hot_ = false;           // past 256 ranks in bf16: one rank holds 1, the others 0
  std::vector<double> expected_;   // by i % modulus_
};

struct SweepSettings {
  int iterations = 20;         // timed
  int warmup_iterations = 5;   // untimed, after the check
};

// One timed form of the all-reduce (out of place or in place), the same on every rank after
// summarize_timing. As all_reduce_perf reports by default, the headline time is the mean over ranks of
// each rank's mean per all-reduce, and algbw and busbw come from it; the slowest rank stands beside it.
struct SweepTiming {
  double time_us_mean = 0;      // per all-reduce: each rank's mean over the iterations, then the mean over ranks
  double time_us_min_rank = 0;  // ... the fastest rank's mean
  double time_us_max_rank = 0;  // ... the slowest rank's mean
  double algbw_gbps = 0;        // from time_us_mean
  double busbw_gbps = 0;
  int64_t wrong = 0;            // wrong elements after the checked all-reduce, summed over ranks
};

// One row of the sweep: both forms of one point.
struct SweepResult {
  SweepPoint point;
  SweepTiming out_of_place;
  SweepTiming in_place;
  int64_t wrong() const { return out_of_place.wrong + in_place.wrong; }
};

// Collective over `comm`: reduces each rank's mean time per all-reduce and wrong-element count.
SweepTiming summarize_timing(Communicator& comm, const SweepPoint& point, double my_seconds_per_allreduce,
                             int64_t my_wrong);

// The CPU backend: MPI_Allreduce through `comm` on host buffers (fp32 and fp64 only). Collective.
SweepResult run_cpu_allreduce(Communicator& comm, const SweepPoint& point, const SweepSettings& settings);

}  // namespace sb
