// The scaling study: the same training on sub-communicators of 1, 2, 4, ... ranks of one job, and the
// speedup and efficiency of each against the smallest. Ranks outside a configuration wait for it.
#pragma once
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "metrics/results_file.h"
#include "train/engine.h"
#include "train/trainer.h"

namespace sb {

struct StudyPoint {
  int gpus = 0;
  double images_per_s = 0;          // mean over the measured (non-warm-up) epochs
  double epoch_time_s = 0;          // mean wall time (max over ranks) of the measured epochs
  double exposed_comm_fraction = 0; // exposed communication time / epoch time, measured epochs
  double speedup = 0;
  double efficiency = 0;
  double time_to_accuracy_s = std::numeric_limits<double>::quiet_NaN();
};

// Default GPU counts: 1, 2, 4, ... up to world, plus world itself when it is not a power of two.
std::vector<int> default_gpu_counts(int world);
// Throws UserError when a count is < 1, larger than the world or repeated.
void check_gpu_counts(const std::vector<int>& counts, int world);

// Figures of one configuration's run, skipping the first `warmup_epochs` epochs (all of them when the
// run was shorter, e.g. stopped early).
StudyPoint summarize_run(int gpus, const RunSummary& run, int warmup_epochs);
// How a study ended: the finished configurations' points, and the stop signal that cut it short (0: none)
// with the GPU count it cut (0: between configurations).
struct StudyOutcome {
  std::vector<StudyPoint> points;
  int stopped_by = 0;
  int stopped_at = 0;
};

// Collective over `world`: for each GPU count (ascending), trains `run_config` on a sub-communicator of
// that many ranks while the others wait, and summarises the run without its first `warmup_epochs`. With
// --parallel dp a configuration is rank 0 alone driving that many replicas (configuration_for).
// `make_engine` builds a configuration's engine on its communicator; `writer_for` gives the tables its
// epochs go to (called on the configuration's ranks; nullptr: none). A configuration cut short by a stop
// signal keeps its epochs but yields no point, and the study ends after it.
StudyOutcome run_scaling_study(
    Communicator& world, const std::vector<int>& counts, const TrainConfig& run_config, int warmup_epochs,
    const std::function<std::unique_ptr<Engine>(Communicator&, const TrainConfig&)>& make_engine,
    const std::function<RunWriter*(int gpus, const TrainConfig&)>& writer_for);

// The configuration of `gpus` GPUs: run_config itself, or with --parallel dp its `gpus` replicas.
TrainConfig configuration_for(const TrainConfig& run_config, int gpus);
// The ranks a configuration of `gpus` GPUs runs on: gpus, or 1 with --parallel dp.
int ranks_for(const TrainConfig& run_config, int gpus);

// Fills speedup and efficiency relative to points[0]: strong scaling compares epoch times (the same
// work), weak scaling compares throughputs (work grows with the GPUs).
void compute_scaling(std::vector<StudyPoint>& points, Scaling mode);

}  // namespace sb
