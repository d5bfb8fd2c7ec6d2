#include "train/scaling_study.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "core/log.h"
#include "train/results_observer.h"
#include "train/stop_signal.h"

namespace sb {

std::vector<int> default_gpu_counts(int world) {
  std::vector<int> counts;
  for (int g = 1; g <= world; g *= 2) counts.push_back(g);
  if (counts.back() != world) counts.push_back(world);
  return counts;
}

void check_gpu_counts(const std::vector<int>& counts, int world) {
  std::set<int> seen;
  for (int g : counts) {
    if (g < 1 || g > world) {
      throw UserError("--gpus lists " + std::to_string(g) + " but the job has " + std::to_string(world) +
                      " ranks; launch at least " + std::to_string(g) + " ranks (one per GPU) or drop it from the list");
    }
    if (!seen.insert(g).second) throw UserError("--gpus lists " + std::to_string(g) + " twice");
  }
}

StudyPoint summarize_run(int gpus, const RunSummary& run, int warmup_epochs) {
  StudyPoint p;
  p.gpus = gpus;
  const size_t first = std::min(static_cast<size_t>(std::max(0, warmup_epochs)),
                                run.epochs.empty() ? size_t{0} : run.epochs.size() - 1);
  double time = 0, samples = 0, comm = 0;
  int n = 0;
  for (size_t e = first; e < run.epochs.size(); ++e) {
    const EpochSummary& s = run.epochs[e];
    time += s.wall_max;
    samples += static_cast<double>(s.global_samples);
    comm += s.phases_max.seconds[kPhaseComm];
    ++n;
  }
  if (n > 0 && time > 0) {
    p.images_per_s = samples / time;
    p.epoch_time_s = time / n;
    p.exposed_comm_fraction = comm / time;
  }
  p.time_to_accuracy_s = run.time_to_target;
  return p;
}

void compute_scaling(std::vector<StudyPoint>& points, Scaling mode) {
  if (points.empty()) return;
  const StudyPoint base = points.front();
  for (auto& p : points) {
    p.speedup = mode == Scaling::Strong ? base.epoch_time_s / p.epoch_time_s : p.images_per_s / base.images_per_s;
    p.efficiency = p.speedup / (static_cast<double>(p.gpus) / base.gpus);
  }
}

TrainConfig configuration_for(const TrainConfig& run_config, int gpus) {
  TrainConfig config = run_config;
  if (config.parallel == Parallel::Dp) config.replicas = gpus;
  return config;
}

int ranks_for(const TrainConfig& run_config, int gpus) { return run_config.parallel == Parallel::Dp ? 1 : gpus; }

StudyOutcome run_scaling_study(
    Communicator& world, const std::vector<int>& counts, const TrainConfig& run_config, int warmup_epochs,
    const std::function<std::unique_ptr<Engine>(Communicator&, const TrainConfig&)>& make_engine,
    const std::function<RunWriter*(int gpus, const TrainConfig&)>& writer_for) {
  StudyOutcome outcome;
  for (int gpus : counts) {
    const int ranks = ranks_for(run_config, gpus);
    if (run_config.parallel == Parallel::Dp) {
      log0("== scale: DataParallel, rank 0 drives %d replica(s), %s scaling\n", gpus, scaling_name(run_config.scaling));
    } else {
      log0("== scale: %d of %d rank(s), %s scaling\n", gpus, world.size(), scaling_name(run_config.scaling));
    }
    std::unique_ptr<Communicator> sub = world.split(world.rank() < ranks ? 0 : -1, world.rank());
    RunSummary run;
    if (sub) {
      const TrainConfig config = configuration_for(run_config, gpus);
      std::unique_ptr<Engine> engine = make_engine(*sub, config);
      ResultsObserver observer(writer_for(gpus, config));
      run = train(config, *sub, *engine, &observer);
    }
    world.barrier();  // ranks outside this configuration wait here
    // A configuration cut short keeps its finished epochs under /configs but gets no /study row. A signal
    // that reached any rank (those outside the configuration too) ends the study after it.
    const bool cut_short = world.allreduce_max(run.interrupted ? 1 : 0) != 0;
    if (!cut_short) outcome.points.push_back(summarize_run(gpus, run, warmup_epochs));
    if (const int signal = world.allreduce_max(stop_signal_received()); signal != 0) {
      outcome.stopped_by = signal;
      outcome.stopped_at = cut_short ? gpus : 0;
      break;
    }
  }
  return outcome;
}

}  // namespace sb
