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

namespace {

// The epochs behind a median throughput: the middle one of an odd count, the two middle ones of an even
// count (median_of). The split of the efficiency loss takes its steps from these, so that it describes the
// epochs the efficiency comes from, not the others of a run whose epochs differ.
std::vector<const EpochSummary*> median_epochs(std::span<const EpochSummary* const> steady) {
  std::vector<const EpochSummary*> order(steady.begin(), steady.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const EpochSummary* a, const EpochSummary* b) { return a->images_per_s < b->images_per_s; });
  if (order.empty()) return order;
  const size_t mid = order.size() / 2;
  if (order.size() % 2) return {order[mid]};
  return {order[mid - 1], order[mid]};
}

}  // namespace

StudyPoint summarize_run(int gpus, const RunSummary& run, int settle_epochs, double shared_startup_s,
                         double configuration_start_s) {
  StudyPoint p;
  p.gpus = gpus;
  std::vector<const EpochSummary*> timed;  // an epoch resumed after its last step has no time
  for (const EpochSummary& s : run.epochs)
    if (std::isfinite(s.wall_max) && s.wall_max > 0) timed.push_back(&s);
  const size_t first = std::min(static_cast<size_t>(std::max(0, settle_epochs)), timed.empty() ? size_t{0} : timed.size() - 1);
  double time = 0, comm = 0, clock_time_product = 0;
  for (size_t e = first; e < timed.size(); ++e) {
    const EpochSummary& s = *timed[e];
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
    const EpochSummary& last = *timed.back();  // every epoch has the same images and steps
    if (last.steps > 0) p.images_per_gpu_step = static_cast<double>(last.global_samples) / static_cast<double>(last.steps) / gpus;
    p.step_s = p.images_per_gpu_step * gpus / p.images_per_s;
    std::vector<SampledEpoch> sampled;
    for (const EpochSummary* s : median_epochs(std::span<const EpochSummary* const>(timed).subspan(first)))
      sampled.push_back(SampledEpoch{s->arrivals.samples, s->step_phase_ns, s->sampled_steps});
    p.step_parts = median_rank_step(sampled, static_cast<int>(last.rank_wall_times.size()));
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
    std::string which;
    for (const auto& [key, value] : combination.values) which += ", " + key + " " + value;
    if (repeated) which += ", repeat " + std::to_string(plan.repeat);
    if (run_config.parallel == Parallel::Dp) {
      log0("== scale: DataParallel, rank 0 drives %d replica(s), %s scaling%s\n", plan.gpus,
           scaling_name(run_config.scaling), which.c_str());
    } else {
      log0("== scale: %d of %d rank(s), %s scaling%s\n", plan.gpus, world.size(), scaling_name(run_config.scaling),
           which.c_str());
    }
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
    if (sub && !run.epochs.empty()) log0("%s\n", run_straggler_line(run).c_str());  // rank 0 holds the arrivals
    world.barrier();  // ranks outside this configuration wait here
    const StartupReport startup = i == 0 ? gather_startup(world) : gather_startup_since(world, startup_before);
    if (writer) write_startup_attributes(*writer, startup);
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
