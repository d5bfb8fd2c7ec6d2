#include "train/study/scaling_study.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <span>

#include "core/error.h"
#include "core/log.h"
#include "core/median.h"
#include "core/startup_clock.h"
#include "core/stop_signal.h"
#include "train/reporting/results_observer.h"
#include "train/reporting/startup_report.h"
#include "train/reporting/summary_line.h"
#include "train/study/step_split.h"

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

std::vector<StudyRunPlan> plan_study(size_t combinations, int repeats, const std::vector<int>& counts) {
  std::vector<StudyRunPlan> plans;
  for (size_t c = 0; c < combinations; ++c)
    for (int r = 1; r <= repeats; ++r)
      for (int gpus : counts) plans.push_back(StudyRunPlan{c, r, gpus});
  return plans;
}

std::vector<const EpochSummary*> steady_epochs(const RunSummary& run, int settle_epochs) {
  std::vector<const EpochSummary*> timed;  // an epoch resumed after its last step has no time
  for (const EpochSummary& s : run.epochs)
    if (std::isfinite(s.wall_max) && s.wall_max > 0) timed.push_back(&s);
  const size_t first = std::min(static_cast<size_t>(std::max(0, settle_epochs)), timed.empty() ? size_t{0} : timed.size() - 1);
  return {timed.begin() + static_cast<std::ptrdiff_t>(first), timed.end()};
}

std::vector<const EpochSummary*> median_epochs(std::span<const EpochSummary* const> steady) {
  std::vector<const EpochSummary*> order(steady.begin(), steady.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const EpochSummary* a, const EpochSummary* b) { return a->images_per_s < b->images_per_s; });
  if (order.empty()) return order;
  const size_t mid = order.size() / 2;
  if (order.size() % 2) return {order[mid]};
  return {order[mid - 1], order[mid]};
}

StepParts sampled_step_parts(std::span<const EpochSummary* const> epochs) {
  if (epochs.empty()) return {};
  std::vector<SampledEpoch> sampled;
  for (const EpochSummary* s : epochs) sampled.push_back(SampledEpoch{s->arrivals.samples, s->step_phase_ns, s->sampled_steps});
  return median_rank_step(sampled, static_cast<int>(epochs.back()->rank_wall_times.size()));
}

StudyPoint summarize_run(int gpus, const RunSummary& run, int settle_epochs, double shared_startup_s,
                         double configuration_start_s) {
  StudyPoint p;
  p.gpus = gpus;
  const std::vector<const EpochSummary*> steady = steady_epochs(run, settle_epochs);
  double time = 0, comm = 0, clock_time_product = 0;
  for (const EpochSummary* epoch : steady) {
    const EpochSummary& s = *epoch;
    p.steady_images_per_s.push_back(s.images_per_s);
    p.steady_epoch_times_s.push_back(s.wall_max);
    time += s.wall_max;
    comm += s.phases_max.seconds[kPhaseComm];
    clock_time_product += s.clocks.sm_clock_min_mhz * s.wall_max;  // NaN once an epoch has no clock
  }
  if (time > 0) {
    p.images_per_s = median_of(p.steady_images_per_s);
    p.min_images_per_s = *std::min_element(p.steady_images_per_s.begin(), p.steady_images_per_s.end());
    p.max_images_per_s = *std::max_element(p.steady_images_per_s.begin(), p.steady_images_per_s.end());
    p.epoch_time_s = median_of(p.steady_epoch_times_s);
    p.exposed_comm_fraction = comm / time;
    p.sm_clock_min_mhz = clock_time_product / time;
    const EpochSummary& last = *steady.back();  // every epoch has the same images and steps
    if (last.steps > 0) p.images_per_gpu_step = static_cast<double>(last.global_samples) / static_cast<double>(last.steps) / gpus;
    p.step_s = p.images_per_gpu_step * gpus / p.images_per_s;
    p.step_parts = sampled_step_parts(median_epochs(steady));
  }
  p.time_to_accuracy_s = run.time_to_target;
  p.wall_to_accuracy_s = shared_startup_s + (run.wall_to_target - configuration_start_s);
  return p;
}

void compute_scaling(std::vector<StudyPoint>& points) {
  const auto same_series = [](const StudyPoint& a, const StudyPoint& b) {
    return a.plan.combination == b.plan.combination && a.plan.repeat == b.plan.repeat;
  };
  for (auto& p : points) {
    const StudyPoint* base = &p;
    for (const StudyPoint& q : points)
      if (same_series(p, q) && q.gpus < base->gpus) base = &q;
    const ScalingRatio r = scaling_ratio(p, *base);
    p.speedup = r.speedup;
    p.efficiency = r.efficiency;
    p.split = split_efficiency(p.efficiency, p.step_s, p.images_per_gpu_step / base->images_per_gpu_step, p.step_parts,
                               base->step_parts);
  }
}

namespace {

// The line that opens a configuration: its ranks (DataParallel's replicas), scaling, swept values, repeat.
void log_configuration(const StudyRunPlan& plan, const SweepCombination& combination, const TrainConfig& run_config,
                       bool repeated, int world_size) {
  std::string which;
  for (const auto& [key, value] : combination.values) which += ", " + key + " " + value;
  if (repeated) which += ", repeat " + std::to_string(plan.repeat);
  if (run_config.parallel == Parallel::Dp) {
    log0("== scale: DataParallel, rank 0 drives %d replica(s), %s scaling%s\n", plan.gpus,
         scaling_name(run_config.scaling), which.c_str());
  } else {
    log0("== scale: %d of %d rank(s), %s scaling%s\n", plan.gpus, world_size, scaling_name(run_config.scaling),
         which.c_str());
  }
}

}  // namespace

StudyOutcome run_scaling_study(
    Communicator& world, const std::vector<StudyRunPlan>& plans, const std::vector<SweepCombination>& combinations,
    int settle_epochs, const std::function<std::unique_ptr<Engine>(const TrainConfig&, Communicator&)>& make_engine,
    const std::function<RunWriter*(const StudyRunPlan&)>& writer_for) {
  StudyOutcome outcome;
  const bool repeated = std::any_of(plans.begin(), plans.end(), [](const StudyRunPlan& p) { return p.repeat > 1; });
  const double shared_startup_s = world.allreduce_max(seconds_since_process_start());
  for (size_t i = 0; i < plans.size(); ++i) {
    const StudyRunPlan& plan = plans[i];
    const SweepCombination& combination = combinations.at(plan.combination);
    const TrainConfig run_config = configuration_for(combination.config, plan.gpus);
    const int ranks = ranks_for(combination.config, plan.gpus);
    log_configuration(plan, combination, run_config, repeated, world.size());
    const double configuration_start_s = world.allreduce_max(seconds_since_process_start());
    // The first configuration's start-up holds the study's own (MPI, data, ...); each later one's only
    // what it timed itself.
    const StartupSnapshot startup_before = startup_snapshot();
    std::unique_ptr<Communicator> sub = world.split(world.rank() < ranks ? 0 : -1, world.rank());
    RunSummary run;
    RunWriter* writer = nullptr;
    if (sub) {
      std::unique_ptr<Engine> engine;
      {
        const EngineBuildTimer engine_startup;
        engine = make_engine(run_config, *sub);
      }
      writer = writer_for(plan);
      ResultsObserver observer(writer);
      run = train({run_config, *sub, *engine, &observer});
    }
    RunStepSplit step_split;
    if (sub && !run.epochs.empty()) {  // rank 0 holds the arrivals and the sampled steps
      step_split = split_run_step(run, run_config, settle_epochs);
      log0("%s\n%s\n", run_straggler_line(run).c_str(), step_split_line(step_split).c_str());
    }
    world.barrier();  // ranks outside this configuration wait here
    const StartupReport startup = i == 0 ? gather_startup(world) : gather_startup_since(world, startup_before);
    if (writer) {
      write_startup_attributes(*writer, startup);
      if (!run.epochs.empty()) writer->write_attributes(step_split_attributes(step_split));
    }
    // A configuration cut short keeps its finished epochs under /configs but gets no /study row. A signal
    // that reached any rank (those outside the configuration too) ends the study after it.
    const bool cut_short = world.allreduce_max(run.interrupted ? 1 : 0) != 0;
    if (!cut_short) {
      outcome.points.push_back(summarize_run(plan.gpus, run, settle_epochs, shared_startup_s, configuration_start_s));
      outcome.points.back().plan = plan;
    }
    outcome.unfinished = cut_short ? i : i + 1;
    if (const int signal = world.allreduce_max(stop_signal_received()); signal != 0) {
      outcome.stopped_by = signal;
      outcome.cut_short = cut_short;
      break;
    }
  }
  return outcome;
}

}  // namespace sb
