#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "cli/command_setup.h"
#include "cli/commands.h"
#include "cli/engine_factory.h"
#include "cli/options.h"
#include "cli/run_metadata.h"
#include "cli/table_exports.h"
#include "cli/training_data.h"
#include "core/error.h"
#include "core/exit_codes.h"
#include "core/log.h"
#include "core/startup_clock.h"
#include "data/dataset_spec.h"
#include "models/registry.h"
#include "train/collective.h"
#include "train/engines/blas_threads.h"
#include "train/study/scaling_study.h"
#include "train/study/study_medians.h"
#include "train/study/study_problems.h"
#include "train/study/study_sweep.h"

namespace sb {
namespace {
StudyRow to_study_row(const StudyPoint& p, const TrainConfig& config) {
  StudyRow row;
  row.gpus = p.gpus;
  row.repeat = p.plan.repeat;
  record_sweep_columns(config, row);
  row.images_per_s = p.images_per_s;
  row.epoch_time_s = p.epoch_time_s;
  row.speedup = p.speedup;
  row.efficiency = p.efficiency;
  row.exposed_comm_fraction = p.exposed_comm_fraction;
  row.time_to_accuracy_s = p.time_to_accuracy_s;
  row.wall_to_accuracy_s = p.wall_to_accuracy_s;
  row.sm_clock_min_mhz = p.sm_clock_min_mhz;
  return row;
}

EfficiencySplitRow to_split_row(const StudyPoint& p) {
  const EfficiencySplit& s = p.split;
  EfficiencySplitRow row;
  row.gpus = p.gpus;
  row.repeat = p.plan.repeat;
  row.efficiency_loss = s.efficiency_loss;
  row.exposed_comm = s.exposed_comm;
  row.skew = s.skew;
  row.skew_compute = s.skew_compute;
  row.skew_input = s.skew_input;
  row.skew_optimizer = s.skew_optimizer;
  row.input = s.input;
  row.compute = s.compute;
  row.unexplained = s.unexplained;
  row.step_s = s.step_s;
  row.ideal_step_s = s.ideal_step_s;
  row.median_rank = s.median_rank;
  row.steps = s.steps;
  return row;
}

// A table's clock cell: "1640 MHz" (no thousands separator, as the table's other numbers), or n/a where no
// clock was measured.
std::string clock_cell(double mhz) { return std::isfinite(mhz) ? std::to_string(std::lround(mhz)) + " MHz" : "n/a"; }

// The /configs group of a run: gpus_<n> and its combination's suffix.
std::string group_name(const StudyRunPlan& plan, const std::vector<SweepCombination>& combinations, int repeats) {
  std::string name = "gpus_";
  name += std::to_string(plan.gpus);
  name += config_suffix(combinations[plan.combination], plan.repeat, repeats);
  return name;
}

// A range of figures: "330-360" (images/s) or "95.1-98.0%" (efficiency).
std::string range_cell(double low, double high, bool percent) {
  char text[48];
  if (percent) std::snprintf(text, sizeof text, "%.1f-%.1f%%", 100.0 * low, 100.0 * high);
  else std::snprintf(text, sizeof text, "%.0f-%.0f", low, high);
  return text;
}

// The study's figures, one row per combination and GPU count: the medians of the steady epochs of all
// repeats with their range, the speedup and efficiency of those medians (the figures of analysis/report.py),
// then what they cannot say (train/study/study_problems.h). With repeats, a note where the baseline's
// epochs differ by more than kBaselineSpreadNote, since every efficiency of that combination moves with it.
constexpr double kBaselineSpreadNote = 0.02;
void print_study_table(const std::vector<StudyPoint>& points, const std::vector<SweepCombination>& combinations,
                       const char* counted, const std::string& unit, int settle_epochs, int repeats) {
  const std::vector<StudyMedian> rows = study_medians(points);
  const std::vector<StudyProblem> problems = study_problems(rows, unit);
  const auto name_of_row = [&](const StudyMedian& r) {
    return "gpus_" + std::to_string(r.gpus) + config_suffix(combinations[r.combination], 1, 1);
  };
  log0("\nthe study: images/s and epoch time are medians over each configuration's steady epochs (the measured ones, "
       "after %d settle epoch(s)%s), with their range; speedup and efficiency are the medians' ratios to the smallest "
       "count's\n",
       settle_epochs, repeats > 1 ? ", of all repeats" : "");
  log0("%6s %14s %15s %12s %9s %11s %15s %13s %12s  %s\n", counted, "images/s", "range", "epoch s", "speedup",
       "efficiency", "range", "exposed comm", "slowest SM", "configuration");
  for (const StudyMedian& r : rows) {
    const char* mark = has_problem(r, problems) ? "*" : " ";  // a measurement problem: see below the table
    log0("%6d %14.1f %15s %12.3f %8.3f%s %9.1f%%%s %15s %12.1f%% %12s  %s\n", r.gpus, r.images_per_s,
         range_cell(r.min_images_per_s, r.max_images_per_s, false).c_str(), r.epoch_time_s, r.speedup, mark,
         100.0 * r.efficiency, mark, range_cell(r.min_efficiency, r.max_efficiency, true).c_str(),
         100.0 * r.exposed_comm_fraction, clock_cell(r.sm_clock_min_mhz).c_str(), name_of_row(r).c_str());
  }
  for (const StudyProblem& p : problems) {
    std::string where;  // the combination of a swept study: " (batch_size 64, precision bf16)"
    for (const auto& [key, value] : combinations[p.combination].values) where += (where.empty() ? " (" : ", ") + key + " " + value;
    if (!where.empty()) where += ")";
    log0("* measurement problem%s: %s\n", where.c_str(), p.text.c_str());
  }
  for (const StudyMedian& r : rows) {
    if (repeats == 1 || !r.baseline || epoch_spread(r) <= kBaselineSpreadNote) continue;
    log0("note: the steady epochs of %s differ by %.1f%% (%.0f-%.0f images/s), and every efficiency of its series moves "
         "with them: run more repeats, or read the ranges (docs/performance.md, \"A study's configurations\")\n",
         name_of_row(r).c_str(), 100.0 * epoch_spread(r), r.min_images_per_s, r.max_images_per_s);
  }
}

// Each run's own figures (the /study rows) when a study repeats its configurations.
void print_runs_table(const std::vector<StudyPoint>& points, const std::vector<SweepCombination>& combinations,
                      const char* counted, int repeats) {
  log0("\neach run: images/s and epoch time are the medians of its own steady epochs, speedup and efficiency against "
       "the same repeat's smallest count\n");
  log0("%6s %14s %12s %9s %11s %13s %12s  %s\n", counted, "images/s", "epoch s", "speedup", "efficiency", "exposed comm",
       "slowest SM", "configuration");
  for (const StudyPoint& p : points) {
    log0("%6d %14.1f %12.3f %9.3f %10.1f%% %12.1f%% %12s  %s\n", p.gpus, p.images_per_s, p.epoch_time_s, p.speedup,
         100.0 * p.efficiency, 100.0 * p.exposed_comm_fraction, clock_cell(p.sm_clock_min_mhz).c_str(),
         group_name(p.plan, combinations, repeats).c_str());
  }
}

// What a stopped study did not finish: the GPU counts of a study of counts alone ("with --gpus 2,4"),
// else the groups it would have written.
std::string unfinished_runs(const std::vector<StudyRunPlan>& plans, size_t first, const std::vector<SweepCombination>& combinations,
                            int repeats) {
  const bool counts_alone = combinations.size() == 1 && repeats == 1;
  std::string rest = counts_alone ? "with --gpus " : "(";
  for (size_t i = first; i < plans.size(); ++i) {
    if (i > first) rest += counts_alone ? "," : " ";
    rest += counts_alone ? std::to_string(plans[i].gpus) : group_name(plans[i], combinations, repeats);
  }
  if (!counts_alone) rest += ")";
  return rest;
}

// What the cheap checks settle: the GPU counts in order, the data set, and every combination of the
// swept values.
struct StudyChecks {
  std::vector<int> counts;
  DatasetSpec data_spec;
  std::vector<SweepCombination> combinations;
};

// Collective, before any expensive work.
StudyChecks check_study(Communicator& world, const TrainConfig& config, const ScaleSettings& scale) {
  StudyChecks checks;
  checks.counts = scale.gpus.empty() ? default_gpu_counts(world.size()) : scale.gpus;
  std::vector<int>& counts = checks.counts;
  run_collectively(world, [&] {
    if (scale.settle_epochs < 0) throw UserError("--settle-epochs must not be negative (got " + std::to_string(scale.settle_epochs) + ")");
    // DataParallel's configurations run on rank 0 alone; DDP's need a rank per GPU. `scale` sets the mode
    // only through its --parallel sweep (the run option is train's).
    const auto parallel = std::find_if(scale.sweeps.begin(), scale.sweeps.end(),
                                       [](const SweepAxis& a) { return a.option == "parallel"; });
    const bool dp_only = parallel != scale.sweeps.end() && parallel->values == std::vector<std::string>{"dp"};
    const int most_gpus = *std::max_element(counts.begin(), counts.end());
    check_gpu_counts(counts, dp_only ? std::max(world.size(), most_gpus) : world.size());
    std::sort(counts.begin(), counts.end());
    // Every combination is validated and its batch must split over every count, before any run starts.
    checks.combinations = sweep_combinations(config, scale.sweeps, counts);
    checks.data_spec = parse_dataset_spec(config.data);
    model_info(config.model);
  });
  return checks;
}

void agree_on_study(Communicator& world, const TrainConfig& config, const ScaleSettings& scale,
                    const std::vector<SweepCombination>& combinations) {
  std::string agreed = config.to_json() + std::to_string(scale.settle_epochs) + " " + std::to_string(scale.repeats);
  for (const SweepCombination& c : combinations) agreed += c.config.to_json();
  agree_on_configuration(world, agreed, config.collective_timeout);
}

// The results file on rank 0, its /study table begun (--out); none elsewhere or without --out.
std::unique_ptr<ResultsFile> open_study_results(MpiSession& session, const TrainConfig& config, const RuntimeInfo& info,
                                                const ScaleSettings& scale, const std::vector<int>& counts) {
  MpiCommunicator& world = session.world();
  if (config.out.empty() || world.rank() != 0) return nullptr;
  auto results = std::make_unique<ResultsFile>(config.out, make_run_metadata(session, info, config, world.size()));
  results->begin_study(StudyInfo{scaling_name(config.scaling), counts.front(),
                                 config.target_accuracy > 0 ? config.target_accuracy : kNotMeasured,
                                 swept_columns(scale.sweeps), scale.repeats, sweep_value_names(), scale.settle_epochs});
  return results;
}

// Every configuration of the study in turn, each under its /configs group where there is a results file.
StudyOutcome run_study(MpiSession& session, const std::vector<StudyRunPlan>& plans, std::vector<SweepCombination>& combinations,
                       const TrainConfig& config, const ScaleSettings& scale, const TrainTest& data, ResultsFile* results) {
  for (SweepCombination& c : combinations) {
    c.config.epochs = config.epochs + scale.settle_epochs;
    c.config.resumable = false;  // a study starts over; a stop signal ends it after the current step
  }
  return run_scaling_study(
      session.world(), plans, combinations, scale.settle_epochs,
      [&](const TrainConfig& run_config, Communicator& sub) {
        return make_engine(run_config, data.train, data.test, sub, session.local_rank(), session.local_size());
      },
      [&](const StudyRunPlan& plan) {
        const SweepCombination& c = combinations[plan.combination];
        const TrainConfig run_config = configuration_for(c.config, plan.gpus);
        return results ? &results->add_config(ConfigGroup{plan.gpus, config_suffix(c, plan.repeat, scale.repeats), plan.repeat,
                                                          run_config.to_json(), ranks_for(c.config, plan.gpus)})
                       : nullptr;
      });
}

// The /study rows and the split of each row's efficiency loss (/efficiency_split), in the results file and
// the export where there are those.
void write_study_rows(const std::vector<StudyPoint>& points, const std::vector<SweepCombination>& combinations,
                      ResultsFile* results, TableExport* exported) {
  if (exported) exported->begin_table("study", export_columns(study_columns()));
  for (const StudyPoint& p : points) {
    const StudyRow row = to_study_row(p, combinations[p.plan.combination].config);
    if (results) results->append_study_row(row);
    if (exported) exported->add_row(export_values(study_columns(), &row));
  }
  if (exported) exported->begin_table("efficiency_split", export_columns(efficiency_split_columns()));
  for (const StudyPoint& p : points) {
    const EfficiencySplitRow row = to_split_row(p);
    if (results) results->append_efficiency_split_row(row);
    if (exported) exported->add_row(export_values(efficiency_split_columns(), &row));
  }
}

// A fraction of efficiency in points: "23.4", or n/a.
std::string points_text(double fraction) {
  char text[24];
  std::snprintf(text, sizeof text, "%.1f", 100.0 * fraction);
  return std::isfinite(fraction) ? text : "n/a";
}

// "4 ranks: loss 23.4 = exposed comm 2.1 + skew 3.0 (compute 2.5, input 0.3, optimizer 0.2) + ...": where
// each configuration above its baseline lost its efficiency (docs/scaling_diagnosis.md).
void print_efficiency_split(const std::vector<StudyPoint>& points_of_study, const std::vector<SweepCombination>& combinations,
                            const char* counted, int repeats) {
  const auto baseline = [&](const StudyPoint& p) {
    return std::none_of(points_of_study.begin(), points_of_study.end(), [&](const StudyPoint& q) {
      return q.plan.combination == p.plan.combination && q.plan.repeat == p.plan.repeat && q.gpus < p.gpus;
    });
  };
  bool header = false;
  for (const StudyPoint& p : points_of_study) {
    const EfficiencySplit& s = p.split;
    if (baseline(p)) continue;  // nothing lost against itself
    if (!header) {
      log0("\nthe efficiency loss against the smallest count, split (points of efficiency, from the median rank's sampled "
           "steps; docs/scaling_diagnosis.md):\n");
      header = true;
    }
    const std::string where = combinations.size() > 1 || repeats > 1 ? " (" + group_name(p.plan, combinations, repeats) + ")" : "";
    if (s.median_rank < 0) {
      log0("%d %s%s: loss %s, not split: no step was sampled (--sample-steps)\n", p.gpus, counted, where.c_str(),
           points_text(s.efficiency_loss).c_str());
      continue;
    }
    const std::string skew = std::isfinite(s.skew) ? points_text(s.skew) + " (compute " + points_text(s.skew_compute) + ", input " +
                                                         points_text(s.skew_input) + ", optimizer " + points_text(s.skew_optimizer) + ")"
                                                   : "n/a (inside exposed comm)";
    log0("%d %s%s: loss %s = exposed comm %s + skew %s + input %s + compute %s + unexplained %s\n", p.gpus, counted,
         where.c_str(), points_text(s.efficiency_loss).c_str(), points_text(s.exposed_comm).c_str(), skew.c_str(),
         points_text(s.input).c_str(), points_text(s.compute).c_str(), points_text(s.unexplained).c_str());
  }
}

void print_study(const std::vector<StudyPoint>& points, const std::vector<SweepCombination>& combinations,
                 const TrainConfig& config, const ScaleSettings& scale) {
  if (points.empty()) return;
  const bool cpu = config.device == Device::Cpu;
  if (scale.repeats > 1) print_runs_table(points, combinations, cpu ? "ranks" : "gpus", scale.repeats);
  print_study_table(points, combinations, cpu ? "ranks" : "gpus", cpu ? "rank" : "GPU", scale.settle_epochs, scale.repeats);
  print_efficiency_split(points, combinations, cpu ? "ranks" : "GPUs", scale.repeats);
}

// A study that a stop signal ended: what it holds and what it did not run.
void log_stopped_study(const StudyOutcome& study, const std::vector<StudyRunPlan>& plans,
                       const std::vector<SweepCombination>& combinations, const TrainConfig& config, int repeats) {
  const StudyRunPlan& cut = plans[study.unfinished];
  const std::string where = study.cut_short ? " during the " + std::to_string(cut.gpus) + "-GPU configuration" : "";
  const std::string rest = unfinished_runs(plans, study.unfinished, combinations, repeats);
  log0("stopped by signal %d%s; %s holds the %zu finished configuration(s); a study does not resume: run the rest "
       "%s\n",
       study.stopped_by, where.c_str(), config.out.empty() ? "no results file" : config.out.c_str(), study.points.size(),
       rest.c_str());
}
}  // namespace

int scale_command(MpiSession& session, const std::vector<std::string>& args, const std::string& command_line) {
  MpiCommunicator& world = session.world();
  StartupSpan setup_startup(StartupPart::setup);  // the first configuration's start-up holds these parts
  // Checks that can fail run collectively: one sentence, every rank stops (train_command.cpp).
  const std::optional<CliConfig> cli =
      parse_command(session, "scale", kScale,
                    "The scaling study in one job: trains on 1, 2, 4, ... of the job's ranks in turn (sub-communicators)\n"
                    "and writes every configuration plus a /study table of speedup and efficiency, and where the efficiency went\n"
                    "(/efficiency_split, also its closing lines).\n"
                    "--epochs counts the measured epochs of each configuration; --settle-epochs run before them, left out of the figures.\n"
                    "--sweep-* options run every combination of their values at every GPU count, --repeats times each.",
                    args, command_line);
  if (!cli) return 0;  // --help
  TrainConfig config = cli->train;
  const ScaleSettings& scale = cli->scale;

  StudyChecks checks = check_study(world, config, scale);
  const std::vector<int>& counts = checks.counts;
  std::vector<SweepCombination>& combinations = checks.combinations;
  agree_on_study(world, config, scale, combinations);
  const auto output_locks = prepare_outputs(world, {config.out, "", "", config.trace});  // a study writes no checkpoint
  const std::unique_ptr<TableExport> exported = prepare_table_export(world, config, {"study", "efficiency_split"});
  run_collectively(world, [&] {
    for (const SweepCombination& c : combinations)
      check_device_available(configuration_for(c.config, counts.back()), session.local_size());
  });

  setup_startup.stop();
  StartupSpan data_startup(StartupPart::data);
  const TrainTest data = load_training_data(world, config, checks.data_spec, counts.back());
  data_startup.stop();
  if (config.device == Device::Cpu) share_blas_threads(session.local_size());

  const RuntimeInfo info = gather_runtime_info(session, config.device == Device::Cuda);
  const std::unique_ptr<ResultsFile> results = open_study_results(session, config, info, scale, counts);
  const std::vector<StudyRunPlan> plans = plan_study(combinations.size(), scale.repeats, counts);
  StudyOutcome study = run_study(session, plans, combinations, config, scale, data, results.get());
  compute_scaling(study.points);
  write_study_rows(study.points, combinations, results.get(), exported.get());
  print_study(study.points, combinations, config, scale);
  if (study.stopped_by != 0 && study.unfinished < plans.size()) {
    if (results) results->close(false);  // complete = 0: a study that did not finish
    log_stopped_study(study, plans, combinations, config, scale.repeats);
    return kExitInterrupted;
  }
  if (results) results->close();
  return 0;
}

}  // namespace sb
