#include "comm/allreduce_sweep.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <span>

#include "core/error.h"

namespace sb {
namespace {

constexpr SweepDtype kAllDtypes[] = {SweepDtype::Fp32, SweepDtype::Fp64, SweepDtype::Bf16, SweepDtype::Fp16};

// The largest integer N such that every integer in [0, N] is exact in the dtype (2^(mantissa bits + 1)).
double max_exact_integer(SweepDtype dtype) {
  switch (dtype) {
    case SweepDtype::Fp32: return 16777216.0;         // 2^24
    case SweepDtype::Fp64: return 9007199254740992.0;  // 2^53
    case SweepDtype::Bf16: return 256.0;              // 2^8
    case SweepDtype::Fp16: return 2048.0;             // 2^11
  }
  return 0;
}

// One form of the all-reduce: in place on `data`, or out of place from `data` into `received`.
template <typename T>
int64_t run_and_check(Communicator& comm, const SweepPoint& point, const SweepSettings& settings, bool in_place,
                      double& seconds) {
  const CheckPattern pattern(point.dtype, comm.size());
  std::vector<T> data(static_cast<size_t>(point.count));
  for (int64_t i = 0; i < point.count; ++i) data[static_cast<size_t>(i)] = static_cast<T>(pattern.value(comm.rank(), i));
  std::vector<T> received(in_place ? 0 : data.size());
  const std::span<T> result = in_place ? std::span<T>(data) : std::span<T>(received);
  const auto allreduce = [&] {
    if (in_place) comm.allreduce_sum(result);
    else comm.allreduce_sum(std::span<const T>(data), result);
  };

  allreduce();
  int64_t wrong = 0;
  for (int64_t i = 0; i < point.count; ++i)
    wrong += static_cast<double>(result[static_cast<size_t>(i)]) != pattern.expected_sum(i);

  for (int i = 0; i < settings.warmup_iterations; ++i) allreduce();
  comm.barrier();  // every rank starts its clock together
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < settings.iterations; ++i) allreduce();
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / settings.iterations;
  return wrong;
}

template <typename T>
SweepResult run_both(Communicator& comm, const SweepPoint& point, const SweepSettings& settings) {
  SweepResult r;
  r.point = point;
  double seconds = 0;
  int64_t wrong = run_and_check<T>(comm, point, settings, false, seconds);
  r.out_of_place = summarize_timing(comm, point, seconds, wrong);
  wrong = run_and_check<T>(comm, point, settings, true, seconds);
  r.in_place = summarize_timing(comm, point, seconds, wrong);
  return r;
}

}  // namespace

const char* sweep_dtype_name(SweepDtype dtype) {
  switch (dtype) {
    case SweepDtype::Fp32: return "fp32";
    case SweepDtype::Fp64: return "fp64";
    case SweepDtype::Bf16: return "bf16";
    case SweepDtype::Fp16: return "fp16";
  }
  return "?";
}

const char* nccl_tests_type_name(SweepDtype dtype) {
  switch (dtype) {
    case SweepDtype::Fp32: return "float";
    case SweepDtype::Fp64: return "double";
    case SweepDtype::Bf16: return "bfloat16";
    case SweepDtype::Fp16: return "half";
  }
  return "?";
}

int64_t sweep_dtype_bytes(SweepDtype dtype) {
  switch (dtype) {
    case SweepDtype::Fp32: return 4;
    case SweepDtype::Fp64: return 8;
    case SweepDtype::Bf16: return 2;
    case SweepDtype::Fp16: return 2;
  }
  return 1;
}

std::vector<std::string> sweep_dtype_names() {
  std::vector<std::string> names;
  for (SweepDtype d : kAllDtypes) names.emplace_back(sweep_dtype_name(d));  // in code order
  return names;
}

std::vector<SweepDtype> parse_sweep_dtypes(const std::vector<std::string>& names) {
  if (names.empty()) throw UserError("--dtypes needs at least one element type: fp32, fp64, bf16 or fp16");
  std::vector<SweepDtype> dtypes;
  for (const std::string& name : names) {
    const auto* found = std::find_if(std::begin(kAllDtypes), std::end(kAllDtypes),
                                     [&](SweepDtype d) { return name == sweep_dtype_name(d); });
    if (found == std::end(kAllDtypes))
      throw UserError("--dtypes: unknown element type '" + name + "'; valid types: fp32, fp64, bf16, fp16");
    if (std::find(dtypes.begin(), dtypes.end(), *found) != dtypes.end())
      throw UserError("--dtypes lists '" + name + "' twice");
    dtypes.push_back(*found);
  }
  return dtypes;
}

bool mpi_can_reduce(SweepDtype dtype) { return dtype == SweepDtype::Fp32 || dtype == SweepDtype::Fp64; }

std::vector<int64_t> power_of_two_sizes(int64_t min_bytes, int64_t max_bytes) {
  if (min_bytes < 1) throw UserError("--min-bytes must be positive (got " + std::to_string(min_bytes) + ")");
  if (max_bytes < min_bytes)
    throw UserError("--max-bytes (" + std::to_string(max_bytes) + ") is smaller than --min-bytes (" +
                    std::to_string(min_bytes) + ")");
  std::vector<int64_t> sizes;
  for (int64_t p = 1; p <= max_bytes; p *= 2) {
    if (p >= min_bytes) sizes.push_back(p);
    if (p > max_bytes / 2) break;  // the next doubling would pass max_bytes (or overflow)
  }
  if (sizes.empty())
    throw UserError("--min-bytes " + std::to_string(min_bytes) + " to --max-bytes " + std::to_string(max_bytes) +
                    " holds no power of two; the sweep runs at powers of two, e.g. --min-bytes 1K --max-bytes 64M");
  return sizes;
}

double algbw_gbps(int64_t bytes, double seconds) { return static_cast<double>(bytes) / seconds / 1e9; }

double allreduce_busbw_factor(int ranks) { return 2.0 * (ranks - 1) / ranks; }

double busbw_gbps(double algbw, int ranks) { return algbw * allreduce_busbw_factor(ranks); }

std::vector<SweepPoint> sweep_points(const std::vector<int64_t>& sizes_bytes, const std::vector<SweepDtype>& dtypes,
                                     int64_t model_elements) {
  std::vector<SweepPoint> points;
  for (SweepDtype dtype : dtypes) {
    const size_t first = points.size();
    for (int64_t bytes : sizes_bytes) {
      const int64_t count = bytes / sweep_dtype_bytes(dtype);
      if (count > 0) points.push_back(SweepPoint{dtype, count, false});
    }
    if (model_elements > 0) {
      const SweepPoint model{dtype, model_elements, true};
      // After every power of two of the same or smaller size.
      const auto at = std::find_if(points.begin() + static_cast<std::ptrdiff_t>(first), points.end(),
                                   [&](const SweepPoint& p) { return p.count > model_elements; });
      points.insert(at, model);
    }
  }
  return points;
}

CheckPattern::CheckPattern(SweepDtype dtype, int ranks) {
  // Values 0..k-1 on each of `ranks` ranks sum to at most (k-1)*ranks, which must stay exact.
  const double exact = max_exact_integer(dtype);
  const int64_t k = std::min<int64_t>(8, static_cast<int64_t>(exact / ranks) + 1);
  if (k >= 2) {
    modulus_ = k;
  } else {  // more ranks than exact integers: a single 1 per element keeps the sum exact
    one_hot_ = true;
    modulus_ = ranks;
  }
  expected_.assign(static_cast<size_t>(modulus_), 0.0);
  for (int64_t j = 0; j < modulus_; ++j)
    for (int r = 0; r < ranks; ++r) expected_[static_cast<size_t>(j)] += value(r, j);
}

SweepTiming summarize_timing(Communicator& comm, const SweepPoint& point, double my_seconds_per_allreduce,
                             int64_t my_wrong) {
  SweepTiming t;
  const double my_us = my_seconds_per_allreduce * 1e6;
  t.time_us_mean = comm.allreduce_avg(my_us);
  t.time_us_min_rank = comm.allreduce_min(my_us);
  t.time_us_max_rank = comm.allreduce_max(my_us);
  t.algbw_gbps = algbw_gbps(point.bytes(), t.time_us_mean * 1e-6);
  t.busbw_gbps = busbw_gbps(t.algbw_gbps, comm.size());
  t.wrong = comm.allreduce_sum(my_wrong);
  return t;
}

SweepResult run_cpu_allreduce(Communicator& comm, const SweepPoint& point, const SweepSettings& settings) {
  if (point.count > INT_MAX)  // the command validates sizes first; this guards other callers
    throw UserError("an all-reduce of " + std::to_string(point.count) + " elements exceeds MPI's int count");
  switch (point.dtype) {
    case SweepDtype::Fp32: return run_both<float>(comm, point, settings);
    case SweepDtype::Fp64: return run_both<double>(comm, point, settings);
    default:
      throw UserError(std::string("--dtypes ") + sweep_dtype_name(point.dtype) +
                      ": MPI has no reduction for it; the CPU backend sweeps fp32 and fp64 (use --device cuda)");
  }
}

}  // namespace sb
