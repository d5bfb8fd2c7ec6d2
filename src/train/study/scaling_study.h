// The scaling study: the same training on sub-communicators of 1, 2, 4, ... ranks of one job, for each
// combination of swept values (train/study/study_sweep.h) and each repeat, and the speedup and efficiency of
// each against the smallest GPU count of the same combination and repeat. Ranks outside a configuration
// wait for it.
#pragma once
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "metrics/results_file.h"
#include "train/engines/engine.h"
#include "train/loop/trainer.h"
#include "train/study/efficiency_split.h"
#include "train/study/study_sweep.h"

namespace sb {

// One run of a study: a combination of swept values (an index into the study's combinations), one of
// its repeats (from 1), on `gpus` ranks.
struct StudyRunPlan {
  size_t combination = 0;
  int repeat = 1;
  int gpus = 1;
};

// The runs of a study in the order they run: per combination, per repeat, the GPU counts ascending.
std::vector<StudyRunPlan> plan_study(size_t combinations, int repeats, const std::vector<int>& counts);

// A run's steady epochs are its measured ones: every timed epoch after the settle epochs, but never fewer
// than its last (analysis/scaling_series.py applies the same rule to the /configs tables).
struct StudyPoint {
  StudyRunPlan plan;
  int gpus = 0;
  double images_per_s = 0;          // median over the steady epochs
  double min_images_per_s = 0;      // their range
  double max_images_per_s = 0;
  double epoch_time_s = 0;          // median wall time (max over ranks) of the steady epochs
  std::vector<double> steady_images_per_s;  // each steady epoch's, for the medians over repeats
  std::vector<double> steady_epoch_times_s;
  double exposed_comm_fraction = 0; // exposed communication time / epoch time, steady epochs
  // The slowest rank's mean SM clock over the measured epochs (weighted by their times), MHz; NaN where an
  // epoch has none (train/run/epoch_clocks.h).
  double sm_clock_min_mhz = std::numeric_limits<double>::quiet_NaN();
  double speedup = 0;
  double efficiency = 0;
  // The efficiency lost against the baseline, split into its causes (train/study/efficiency_split.h): from
  // the median rank's mean sampled step of the steady epochs behind the median throughput (the middle one,
  // or the two middle ones of an even count), a step's images per GPU, and the step time at the measured
  // throughput (a step's images over images_per_s).
  StepParts step_parts;
  double images_per_gpu_step = 0;
  double step_s = std::numeric_limits<double>::quiet_NaN();
  EfficiencySplit split;
  double time_to_accuracy_s = std::numeric_limits<double>::quiet_NaN();
  // From process start to the end of the epoch that reached the target, as if this configuration had run
  // alone: the study's shared start-up (up to its first configuration) plus this configuration's own time
  // from its start (its engine's construction included).
  double wall_to_accuracy_s = std::numeric_limits<double>::quiet_NaN();
};

// Default GPU counts: 1, 2, 4, ... up to world, plus world itself when it is not a power of two.
std::vector<int> default_gpu_counts(int world);
// Throws UserError when a count is < 1, larger than the world or repeated.
void check_gpu_counts(const std::vector<int>& counts, int world);

// A run's steady epochs: its timed ones after the first `settle_epochs` (the last alone when the run was
// shorter, e.g. stopped early), in order.
std::vector<const EpochSummary*> steady_epochs(const RunSummary& run, int settle_epochs);
// Of steady epochs, those behind their median throughput: the middle one of an odd count, the two middle
// ones of an even count (median_of). The sampled steps that split a step (the efficiency split, the step
// split of train/study/step_split.h) come from these, so that the split describes the epochs the
// throughput comes from, not the others of a run whose epochs differ.
std::vector<const EpochSummary*> median_epochs(std::span<const EpochSummary* const> steady);
// The median rank's mean sampled step over `epochs` (root's summaries: their arrivals and /steps).
StepParts sampled_step_parts(std::span<const EpochSummary* const> epochs);

// Figures of one configuration's run over its steady epochs: the timed ones after the first
// `settle_epochs` (the last alone when the run was shorter, e.g. stopped early).
// `shared_startup_s` and `configuration_start_s`: seconds from process start to the study's first
// configuration and to this one's (they give wall_to_accuracy_s).
StudyPoint summarize_run(int gpus, const RunSummary& run, int settle_epochs, double shared_startup_s = 0,
                         double configuration_start_s = 0);
// How a study ended: the finished configurations' points, and the stop signal that cut it short (0: none).
// `unfinished` is the index of the first plan without a point; `cut_short` says whether that one ran
// (and was stopped) or never began.
struct StudyOutcome {
  std::vector<StudyPoint> points;
  int stopped_by = 0;
  size_t unfinished = 0;
  bool cut_short = false;
};

// Collective over `world`: for each plan in turn, trains `combinations[plan.combination].config` on a
// sub-communicator of plan.gpus ranks (with --parallel dp, rank 0 alone driving plan.gpus replicas:
// configuration_for and ranks_for, train/study/study_sweep.h) while the others wait, and summarises the run without its first
// `settle_epochs`. `make_engine` builds a configuration's engine on its communicator; `writer_for` gives
// the tables its epochs go to (called on the configuration's ranks; nullptr: none). A configuration cut
// short by a stop signal keeps its epochs but yields no point, and the study ends after it.
StudyOutcome run_scaling_study(
    Communicator& world, const std::vector<StudyRunPlan>& plans, const std::vector<SweepCombination>& combinations,
    int settle_epochs, const std::function<std::unique_ptr<Engine>(const TrainConfig&, Communicator&)>& make_engine,
    const std::function<RunWriter*(const StudyRunPlan&)>& writer_for);

// The speedup and efficiency of `p` against `base` (any type with gpus and images_per_s): the ratio of
// their throughputs, which for strong scaling (the same images per epoch) is that of their epoch times,
// and for weak scaling (work grows with the GPUs) the only one. One rule for the study's points, its
// medians over repeats (train/study/study_medians.h) and analysis/report.py.
struct ScalingRatio {
  double speedup = 0;
  double efficiency = 0;
};
template <typename Point>
ScalingRatio scaling_ratio(const Point& p, const Point& base) {
  ScalingRatio r;
  r.speedup = p.images_per_s / base.images_per_s;
  r.efficiency = r.speedup / (static_cast<double>(p.gpus) / base.gpus);
  return r;
}

// Fills speedup, efficiency and the split of its loss of each point relative to the point of the smallest
// GPU count with the same combination and repeat (scaling_ratio, split_efficiency).
void compute_scaling(std::vector<StudyPoint>& points);

}  // namespace sb
