// Which rank holds the others up at the gradient all-reduce (docs/scaling_diagnosis.md). The all-reduce
// evens out every rank's wall time, so only what each rank did before it reached the collective can show
// a straggler: its arrival, the time from the step's start to the collective on the rank's own clock,
// with the input wait and the compute it is made of. Each rank measures durations only; no clocks need
// to agree across nodes.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sb {

// One rank's numbers at one sampled step, seconds on the rank's own clock.
struct StepArrival {
  double arrival_s = 0;    // from the step's start to its arrival at the gradient collective
  double input_s = 0;      // of it, waiting for the step's batch (the data phase)
  double compute_s = 0;    // of it, forward and backward (the GPU's beside the all-reduces included)
  double optimizer_s = 0;  // the update after the collective (not part of the arrival)
  // In the step's two other collectives, waits included: the check before the gradient all-reduce (at
  // the arrival) and the stop check after the update. Not part of the rule; the study's efficiency split
  // (train/study/efficiency_split.h) counts it as communication.
  double collectives_s = 0;
};

// One rank over an epoch's sampled steps: the means, and how often it arrived last.
struct RankArrivals {
  int rank = 0;
  std::string host;
  int64_t steps = 0;
  double arrival_s = 0, input_s = 0, compute_s = 0, optimizer_s = 0;
  int64_t steps_last = 0;  // sampled steps at which it arrived after every other rank
};

enum class StragglerCause { none = 0, compute = 1, input = 2 };

// The naming rule's verdict over an epoch's sampled steps. The candidate is the rank that arrived last
// most often; it is named (rank >= 0) when it arrived last in more than half the steps and its mean
// excess over the median rank's arrival passes threshold_s: the larger of kStragglerMinShareOfArrival
// of the median rank's typical (median) arrival and kStragglerJitterFactor times the arrivals' jitter.
// The median rank at a step is the lower median of the ranks' arrivals, always one rank's own (with two
// ranks, the earlier one).
struct StragglerVerdict {
  int rank = -1;       // the named straggler; -1 when none stands out
  int candidate = -1;  // the rank last most often; -1 without a verdict (fewer than 2 ranks or 3 steps)
  int64_t steps = 0;   // sampled steps the verdict covers
  double last_share = 0;   // the candidate's share of them at which it arrived last, 0..1
  double excess_s = 0;     // the candidate's mean arrival after the median rank's, s
  double threshold_s = 0;  // what excess_s must pass to name it, s
  double jitter_s = 0;     // the ranks' median step-to-step spread of arrival (median absolute deviation), s
  double compute_s = 0, median_compute_s = 0;  // the candidate's mean compute and the median rank's, s
  double input_s = 0, median_input_s = 0;      // the same for the input wait, s
  StragglerCause cause = StragglerCause::none;  // the larger excess of the two, for a named rank
};

inline constexpr double kStragglerMinLastShare = 0.5;       // strictly more than half the steps
inline constexpr double kStragglerMinShareOfArrival = 0.10;  // of the median rank's typical arrival
inline constexpr double kStragglerJitterFactor = 3.0;        // times the arrivals' step-to-step jitter
inline constexpr int64_t kStragglerMinSteps = 3;

// An epoch's arrivals, root only: one entry per rank (empty when the engine does not time arrivals or
// no step was sampled), and the verdict over them.
struct EpochArrivals {
  std::vector<RankArrivals> ranks;
  StragglerVerdict straggler;
  std::vector<StepArrival> samples;  // [rank][step]: the steps behind the means (the study's efficiency split)
  bool measured() const { return !ranks.empty(); }
};

// samples: [rank][step], `ranks` x steps entries, every rank with the same sampled steps; hosts: one per
// rank (may be empty).
EpochArrivals summarize_arrivals(std::span<const StepArrival> samples, int ranks, std::span<const std::string> hosts);

// The line `train` and each `scale` configuration print: "straggler: rank 1 (host x) arrived last ..."
// or "straggler: none stands out (...)". epoch: 0-based, for the words.
std::string straggler_line(const EpochArrivals& arrivals, int epoch);

const char* straggler_cause_name(StragglerCause cause);

}  // namespace sb
