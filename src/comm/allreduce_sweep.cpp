#include "comm/allreduce_sweep.h"

#include <algorithm>
#include <chrono>
#include <climits>

#include "core/error.h"

namespace sb {
namespace {

// The host buffers of one form. Out of place: the input in `send`, the result in `receive`. In place:
// one buffer of `count` elements holding the input at the collective's offset and, afterwards, the
// result at its offset. Result elements start as kUnwritten, so that one never written is caught.
template <typename T>
struct HostForm {
  std::vector<T> send, receive;
  std::span<T> result;
  MpiCollectiveCall call{};

  HostForm(MpiCommunicator& comm, const Collective& c, const SweepPoint& point, bool in_place) {
    const int rank = comm.rank(), ranks = comm.size();
    const CheckPattern pattern(point.dtype, ranks);
    const int64_t per_rank = c.per_rank_count(point.count, ranks);
    const int64_t inputs = c.send_count(point.count, ranks);
    receive.assign(static_cast<size_t>(in_place ? point.count : c.receive_count(point.count, ranks)),
                   static_cast<T>(CheckPattern::kUnwritten));
    if (!in_place) send.assign(static_cast<size_t>(inputs), static_cast<T>(CheckPattern::kUnwritten));
    T* input = in_place ? receive.data() + c.in_place_input_offset(rank, per_rank) : send.data();
    if (sends_input(c, rank))
      for (int64_t j = 0; j < inputs; ++j) input[j] = static_cast<T>(pattern.value(rank, j));
    const int64_t at = in_place ? c.in_place_result_offset(rank, per_rank, /*mpi=*/true) : 0;
    result = std::span<T>(receive).subspan(static_cast<size_t>(at), static_cast<size_t>(c.receive_count(point.count, ranks)));
    call = MpiCollectiveCall{in_place ? nullptr : send.data(), receive.data(), per_rank,
                             sweep_mpi_datatype(point.dtype), comm.handle(), rank};
  }
};

// One form: checked once, then timed.
template <typename T>
int64_t run_and_check(MpiCommunicator& comm, const Collective& c, const SweepPoint& point, const SweepSettings& settings,
                      bool in_place, double& seconds) {
  HostForm<T> form(comm, c, point, in_place);
  c.run_mpi(form.call);
  const CheckPattern pattern(point.dtype, comm.size());
  const int64_t wrong = count_wrong(c, pattern, comm.rank(), form.call.per_rank, std::span<const T>(form.result),
                                    [](T x) { return static_cast<double>(x); });

  for (int i = 0; i < settings.warmup_iterations; ++i) c.run_mpi(form.call);
  comm.barrier();  // every rank starts its clock together
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < settings.iterations; ++i) c.run_mpi(form.call);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / settings.iterations;
  return wrong;
}

template <typename T>
SweepResult run_both(MpiCommunicator& comm, const Collective& c, const SweepPoint& point, const SweepSettings& settings) {
  SweepResult r;
  r.point = point;
  double seconds = 0;
  int64_t wrong = run_and_check<T>(comm, c, point, settings, false, seconds);
  r.out_of_place = summarize_timing(comm, point, seconds, wrong);
  wrong = run_and_check<T>(comm, c, point, settings, true, seconds);
  r.in_place = summarize_timing(comm, point, seconds, wrong);
  return r;
}

}  // namespace

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

double allreduce_busbw_factor(int ranks) { return kAllReduce.busbw_factor(ranks); }

double busbw_gbps(double algbw, int ranks) { return algbw * allreduce_busbw_factor(ranks); }

std::vector<SweepPoint> sweep_points(const Collective& collective, int ranks, const std::vector<int64_t>& sizes_bytes,
                                     const std::vector<SweepDtype>& dtypes, int64_t model_elements) {
  std::vector<SweepPoint> points;
  const int64_t model_count = model_elements > 0 ? collective.usable_count(model_elements, ranks) : 0;
  for (SweepDtype dtype : dtypes) {
    const size_t first = points.size();
    for (int64_t bytes : sizes_bytes) {
      const int64_t count = collective.usable_count(bytes / sweep_dtype_bytes(dtype), ranks);
      if (count > 0) points.push_back(SweepPoint{dtype, count, false, collective.kind});
    }
    if (model_count > 0) {
      const SweepPoint model{dtype, model_count, true, collective.kind};
      // After every power of two of the same or smaller size.
      const auto at = std::find_if(points.begin() + static_cast<std::ptrdiff_t>(first), points.end(),
                                   [&](const SweepPoint& p) { return p.count > model_count; });
      points.insert(at, model);
    }
  }
  return points;
}

SweepTiming summarize_timing(Communicator& comm, const SweepPoint& point, double my_seconds_per_call, int64_t my_wrong) {
  SweepTiming t;
  const double my_us = my_seconds_per_call * 1e6;
  t.time_us_mean = comm.allreduce_avg(my_us);
  t.time_us_min_rank = comm.allreduce_min(my_us);
  t.time_us_max_rank = comm.allreduce_max(my_us);
  t.algbw_gbps = algbw_gbps(point.bytes(), t.time_us_mean * 1e-6);
  t.busbw_gbps = t.algbw_gbps * collective_of(point.collective).busbw_factor(comm.size());
  t.wrong = comm.allreduce_sum(my_wrong);
  const int32_t lowest = comm.allreduce_min(static_cast<int32_t>(my_wrong > 0 ? comm.rank() : INT_MAX));
  t.first_wrong_rank = lowest == INT_MAX ? -1 : lowest;
  return t;
}

SweepResult run_cpu_collective(MpiCommunicator& comm, const Collective& collective, const SweepPoint& point,
                               const SweepSettings& settings) {
  if (point.count > INT_MAX)  // the command validates sizes first; this guards other callers
    throw UserError("a " + std::string(collective.name) + " of " + std::to_string(point.count) +
                    " elements exceeds MPI's int count");
  switch (point.dtype) {
    case SweepDtype::Fp32: return run_both<float>(comm, collective, point, settings);
    case SweepDtype::Fp64: return run_both<double>(comm, collective, point, settings);
    default:
      throw UserError(std::string("--dtypes ") + sweep_dtype_name(point.dtype) +
                      ": MPI has no reduction for it; the CPU backend sweeps fp32 and fp64 (use --device cuda)");
  }
}

}  // namespace sb
