// The efficiency a study lost at a GPU count, split into its causes (docs/scaling_diagnosis.md, "The
// efficiency loss, split"). The study's efficiency is a ratio of throughputs; in step time it reads
// E = ideal / t, where t is the step time at the measured throughput and ideal is the baseline's step time
// scaled by the per-GPU work of a step (1 under weak scaling, baseline GPUs / GPUs under strong). The loss
// 1 - E = (t - ideal) / t, so each part is a difference of per-step seconds between the count and the
// baseline (the baseline's scaled the same way), over t. All of them are the median rank's: a rank whose
// own step holds every cause once, since every rank's step lasts as long (they leave each collective
// together). What the measured phases do not cover is left as the unexplained rest.
#pragma once
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "train/run/straggler.h"

namespace sb {

// One epoch's sampled steps, as the configuration's root holds them: each rank's arrival numbers
// ([rank][step], train/run/straggler.h; empty where the engine does not time its arrival) and each rank's
// phases ([rank][step][phase], ns, as /steps).
struct SampledEpoch {
  std::span<const StepArrival> arrivals;
  std::span<const int64_t> phase_ns;
  int64_t phase_steps = 0;  // the steps of phase_ns
};

// The median rank's mean sampled step, seconds. The median rank is the lower median of the ranks by their
// mean arrival plus optimizer (with two ranks, the earlier one). Its step: input wait, compute (the rest of
// its arrival: forward, backward, the micro-batches' gradient sum), optimizer, and its time in the step's
// collectives: the comm phase (the gradient all-reduce) and the check before it and the stop check after
// the update. Of that time, its skew wait is the wait for later ranks: at each step, the last arrival
// minus its own (at the check) plus the longest optimizer minus its own (at the stop check); the rest is
// its exposed communication. The skew wait splits by the later rank's excess over the median rank's: input
// wait and compute for the arrival, optimizer for the update. Without arrivals (an engine that does not
// time them) the input wait and compute are its data and forward plus backward phases, the exposed
// communication its comm phase, and the skew wait is NaN: it lies inside comm.
struct StepParts {
  int rank = -1;  // the median rank; -1 when nothing was sampled
  int64_t steps = 0;
  double input_s = NAN, compute_s = NAN, optimizer_s = NAN;
  double comm_s = NAN;         // the comm phase
  double collectives_s = NAN;  // in the check and the stop check; NaN without arrivals
  double exposed_comm_s = NAN; // comm_s + collectives_s - skew_s (comm_s without arrivals)
  double skew_s = NAN, skew_input_s = NAN, skew_compute_s = NAN, skew_optimizer_s = NAN;
  // The rank that arrived last most often at the steps where the median rank was not last itself (the
  // lowest at a tie): the one its skew wait mostly waited for; -1 without arrivals or such steps.
  int late_rank = -1;
};

// Over the sampled steps of `epochs`, each with the same `ranks`.
StepParts median_rank_step(std::span<const SampledEpoch> epochs, int ranks);

// A count's loss of efficiency in parts, each a fraction of the ideal efficiency (1 = 100 points):
// efficiency_loss = exposed_comm + skew + input + compute + unexplained, skew = skew_input + skew_compute
// + skew_optimizer. NaN where not measured (a NaN skew is counted inside exposed_comm).
struct EfficiencySplit {
  double efficiency_loss = NAN;  // 1 - the study's efficiency
  double step_s = NAN;           // the step time at the measured throughput
  double ideal_step_s = NAN;     // the baseline's, scaled by the per-GPU work of a step: efficiency x step_s
  double exposed_comm = NAN;
  double skew = NAN, skew_input = NAN, skew_compute = NAN, skew_optimizer = NAN;
  double input = NAN;
  double compute = NAN;  // the median rank's compute and optimizer
  double unexplained = NAN;
  int median_rank = -1;
  int64_t steps = 0;  // sampled steps behind the parts at this count
};

// `efficiency`: the study's; `step_s`: the step time at the measured throughput; `work_ratio`: a step's
// images per GPU here over the baseline's.
EfficiencySplit split_efficiency(double efficiency, double step_s, double work_ratio, const StepParts& here,
                                 const StepParts& baseline);

}  // namespace sb
