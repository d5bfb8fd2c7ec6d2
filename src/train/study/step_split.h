// What limits one run (docs/scaling_diagnosis.md, "What limits one run"): where the median rank's step
// went over the sampled steps of the run's steady epochs (train/study/efficiency_split.h's StepParts), as
// shares of the step time; the accelerator utilisation (AU: compute and optimizer over the step, MLPerf
// Storage's definition, as `scalebench io --emulate-gpus` reports it); what limits the run, named; and
// for image files decoded by CPU workers, the workers a rank would need for AU at the bar.
#pragma once
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/gpu_emulation.h"
#include "data/input_counters.h"
#include "metrics/results_file.h"
#include "train/run/run_summary.h"
#include "train/study/efficiency_split.h"
#include "train/train_config.h"

namespace sb {

// The epochs a `train` run settles in before its steady ones (those of analysis/report.py).
inline constexpr int kTrainSettleEpochs = 1;

// What holds a run back: compute where AU reaches the bar (kUtilisationBar), else the largest of the
// parts that keep the accelerator waiting (input, communication, skew, rest). The values are the codes
// the results file stores in step_split_limited_by (docs/results_schema.md): never renumber them.
enum class StepLimit { none = 0, compute = 1, input = 2, communication = 3, skew = 4, rest = 5 };

// A step's parts as shares of its time. step_s is the epochs' mean step (their wall time over their
// steps), so the rest holds what no part covers: the loop between steps, an epoch's start and end. compute and optimizer are the median rank's own, input its input wait, comm its exposed
// communication and skew its wait for later ranks at the collectives. Where the engine does not time its
// arrival, skew is NaN and lies inside comm.
struct StepSplit {
  int rank = -1;        // the median rank; -1 when no step was sampled
  int64_t steps = 0;    // sampled steps behind the parts
  double step_s = NAN;
  double compute = NAN, optimizer = NAN, input = NAN, comm = NAN, skew = NAN, rest = NAN;
  double utilisation = NAN;  // AU = compute + optimizer
  StepLimit limit = StepLimit::none;
  int late_rank = -1;  // the rank the skew wait mostly waited for (StepParts::late_rank)
};

StepSplit split_step(const StepParts& parts, double step_s);

// How a rank's input workers build its batches: within the step, before its forward, while the step
// waits (the CPU engine; the workers idle while it computes), or ahead, beside the steps (the CUDA
// engine's host workers).
enum class InputBuild { in_step, ahead };

// The workers a rank would need for AU at `bar`. With c the step's compute and optimizer and o the rest
// of the step beside its input wait, AU >= bar needs a step of at most c / bar. A batch of B images must
// then be built within the time the workers may take: c / bar - c - o when they build in the step, c / bar
// when they build ahead (beside c + o, which must fit in c / bar too). Either way, no worker count reaches
// the bar when c / (c + o), the AU without any input wait, is below it.
struct WorkersForBar {
  double au_without_input = NAN;  // c / (c + o)
  bool reachable = false;         // au_without_input >= bar
  double images_per_s = NAN;      // B over the time the workers may take: the rate a rank needs
  double images_per_worker_s = NAN;  // what one worker built per busy second (images_per_worker_second)
  int workers = 0;                   // workers_needed(images_per_s, the input's work); 0 when not reachable
};

WorkersForBar workers_for_bar(const StepParts& parts, double step_s, double images_per_rank_step, const InputTotals& input,
                              InputBuild build, double bar = kUtilisationBar);

// A run's split, and what its input hint needs.
struct RunStepSplit {
  StepSplit split;
  std::optional<WorkersForBar> workers;  // image files decoded by CPU workers while AU is below the bar
  bool gpu_decoded = false;              // image files decoded by nvJPEG (--decode gpu)
  int workers_given = 0;                 // --workers (0: the default)
};

// Root only (the other ranks hold no sampled steps: their split has rank -1). `settle_epochs`: the
// run's settle epochs (kTrainSettleEpochs for `train`, --settle-epochs for a study's configuration).
RunStepSplit split_run_step(const RunSummary& run, const TrainConfig& config, int settle_epochs);

// "step split: 41.2 ms a step on rank 0 over 24 sampled steps: compute 62%, input wait 35%, ...; AU 64%,
// limited by input: ..." or the line that says the steps were not sampled.
std::string step_split_line(const RunStepSplit& run);

// The split as the run's attributes: X(attribute name, unit, value), the value an expression of the
// RunStepSplit `s`; NaN where not measured. step_split_limited_by carries the line's verdict (its StepLimit
// code, 0 where none is named), so that readers take it from here rather than decide it again. docs/results_schema.md ("The step split") says
// what each means.
#define SB_STEP_SPLIT_ATTRIBUTES(X)                                                                   \
  X(step_split_step_s, "s", s.split.step_s)                                                           \
  X(step_split_compute, "1", s.split.compute)                                                         \
  X(step_split_optimizer, "1", s.split.optimizer)                                                     \
  X(step_split_input, "1", s.split.input)                                                             \
  X(step_split_comm, "1", s.split.comm)                                                               \
  X(step_split_skew, "1", s.split.skew)                                                               \
  X(step_split_rest, "1", s.split.rest)                                                               \
  X(step_split_accelerator_utilisation, "1", s.split.utilisation)                                     \
  X(step_split_median_rank, "1", s.split.rank >= 0 ? s.split.rank : NAN)                              \
  X(step_split_steps, "1", s.split.steps)                                                             \
  X(step_split_workers_for_bar, "1", s.workers && s.workers->reachable ? s.workers->workers : NAN)    \
  X(step_split_limited_by, "1", static_cast<int>(s.split.limit))                                      \
  X(step_split_late_rank, "1", s.split.late_rank >= 0 ? s.split.late_rank : NAN)

std::vector<NamedValue> step_split_attributes(const RunStepSplit& s);

}  // namespace sb
