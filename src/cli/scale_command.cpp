#include <algorithm>
#include <cstdio>
#include <memory>

#include "cli/command_setup.h"
#include "cli/table_exports.h"
#include "cli/commands.h"
#include "cli/engine_factory.h"
#include "cli/options.h"
#include "cli/run_metadata.h"
#include "cli/training_data.h"
#include "core/error.h"
#include "core/exit_codes.h"
#include "core/log.h"
#include "data/dataset_spec.h"
#include "models/registry.h"
#include "train/blas_threads.h"
#include "train/collective.h"
#include "train/scaling_study.h"

namespace sb {
namespace {
StudyRow to_study_row(const StudyPoint& p) {
  StudyRow row;
  row.gpus = p.gpus;
  row.images_per_s = p.images_per_s;
  row.epoch_time_s = p.epoch_time_s;
  row.speedup = p.speedup;
  row.efficiency = p.efficiency;
  row.exposed_comm_fraction = p.exposed_comm_fraction;
  row.time_to_accuracy_s = p.time_to_accuracy_s;
  return row;
}
}  // namespace

int scale_command(MpiSession& session, const std::vector<std::string>& args, const std::string& command_line) {
  MpiCommunicator& world = session.world();
  // Checks that can fail run collectively: one sentence, every rank stops (train_command.cpp).
  const std::optional<CliConfig> cli =
      parse_command(session, "scale", kScale,
                    "The scaling study in one job: trains on 1, 2, 4, ... of the job's ranks in turn (sub-communicators)\n"
                    "and writes every configuration plus a /study table of speedup and efficiency.\n"
                    "--epochs counts the measured epochs of each configuration; --warmup-epochs come before them.",
                    args, command_line);
  if (!cli) return 0;  // --help
  TrainConfig config = cli->train;
  const ScaleSettings& scale = cli->scale;
  std::vector<int> counts = scale.gpus.empty() ? default_gpu_counts(world.size()) : scale.gpus;

  DatasetSpec data_spec;
  run_collectively(world, [&] {
    config.validate();
    if (scale.warmup_epochs < 0) throw UserError("--warmup-epochs must not be negative (got " + std::to_string(scale.warmup_epochs) + ")");
    check_gpu_counts(counts, world.size());
    std::sort(counts.begin(), counts.end());
    for (int g : counts) config.per_rank_batch(g);  // every configuration's batch must split
    data_spec = parse_dataset_spec(config.data);
    model_info(config.model);
  });
  agree_on_configuration(world, config.to_json() + std::to_string(scale.warmup_epochs), config.collective_timeout);
  const auto output_locks = prepare_outputs(world, {config.out, "", "", config.trace});  // a study writes no checkpoint
  const std::unique_ptr<TableExport> exported = prepare_table_export(world, config, {"study"});
  run_collectively(world, [&] { check_device_available(config, session.local_size()); });

  const TrainTest data = load_training_data(world, config, data_spec, counts.back());
  if (config.device == Device::Cpu) share_blas_threads(session.local_size());

  const RuntimeInfo info = gather_runtime_info(session, config.device == Device::Cuda);
  std::unique_ptr<ResultsFile> results;
  if (!config.out.empty() && world.rank() == 0) {
    results = std::make_unique<ResultsFile>(config.out, make_run_metadata(session, info, config, world.size()));
    results->begin_study(StudyInfo{scaling_name(config.scaling), counts.front(), config.target_accuracy > 0 ? config.target_accuracy : kNotMeasured});
  }

  TrainConfig run_config = config;
  run_config.epochs = config.epochs + scale.warmup_epochs;
  run_config.resumable = false;  // a study starts over; a stop signal ends it after the current step
  StudyOutcome study = run_scaling_study(
      world, counts, run_config, scale.warmup_epochs,
      [&](Communicator& sub) { return make_engine(run_config, data.train, data.test, sub, session.local_rank(), session.local_size()); },
      [&](int gpus) { return results ? &results->add_config(gpus, run_config.to_json()) : nullptr; });
  std::vector<StudyPoint>& points = study.points;
  const int stopped_by = study.stopped_by, stopped_at = study.stopped_at;
  compute_scaling(points, config.scaling);
  if (exported) exported->begin_table("study", export_columns(study_columns()));
  log0("\n%6s %14s %12s %9s %11s %13s\n", "gpus", "images/s", "epoch s", "speedup", "efficiency", "exposed comm");
  for (const StudyPoint& p : points) {
    log0("%6d %14.1f %12.3f %9.3f %10.1f%% %12.1f%%\n", p.gpus, p.images_per_s, p.epoch_time_s, p.speedup,
         100.0 * p.efficiency, 100.0 * p.exposed_comm_fraction);
    if (results) results->append_study_row(to_study_row(p));
    if (exported) {
      const StudyRow row = to_study_row(p);
      exported->add_row(export_values(study_columns(), &row));
    }
  }
  std::string rest;  // the GPU counts without a finished configuration
  for (size_t i = points.size(); i < counts.size(); ++i) rest += (rest.empty() ? "" : ",") + std::to_string(counts[i]);
  if (stopped_by != 0 && !rest.empty()) {
    if (results) results->close(false);  // complete = 0: a study that did not finish
    const std::string where = stopped_at > 0 ? " during the " + std::to_string(stopped_at) + "-GPU configuration" : "";
    log0("stopped by signal %d%s; %s holds the %zu finished configuration(s); a study does not resume: run the rest "
         "with --gpus %s\n",
         stopped_by, where.c_str(), config.out.empty() ? "no results file" : config.out.c_str(), points.size(), rest.c_str());
    return kExitInterrupted;
  }
  if (results) results->close();
  return 0;
}

}  // namespace sb
