#include <cmath>
#include <cstdio>
#include <memory>

#include "cli/command_setup.h"
#include "cli/commands.h"
#include "cli/engine_factory.h"
#include "cli/options.h"
#include "cli/run_attributes.h"
#include "cli/run_metadata.h"
#include "cli/table_exports.h"
#include "cli/training_data.h"
#include "comm/root_check.h"
#include "core/error.h"
#include "core/exit_codes.h"
#include "core/log.h"
#include "core/shutdown_clock.h"
#include "data/dataset_spec.h"
#include "metrics/flops_rate.h"
#include "models/registry.h"
#include "nn/flops.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/resume_check.h"
#include "train/collective.h"
#include "train/engines/blas_threads.h"
#include "train/loop/trainer.h"
#include "train/reporting/clocks_line.h"
#include "train/reporting/mllog.h"
#include "train/reporting/results_observer.h"
#include "train/reporting/startup_report.h"
#include "train/reporting/summary_line.h"
#include "train/run/train_observers.h"
#include "train/study/step_split.h"

namespace sb {
namespace {

// The cheap checks, in the order a user would fix them (values, then ranks), and every rank's agreement
// on the result; the data set named by --data.
DatasetSpec check_values(Communicator& world, TrainConfig& config) {
  DatasetSpec data_spec;
  run_collectively(world, [&] {
    config.validate();
    config.per_rank_batch(world.size());
    data_spec = parse_dataset_spec(config.data);
    model_info(config.model);
  });
  agree_on_configuration(world, config.to_json(), config.collective_timeout);
  return data_spec;
}

// Whether rank 0 writes the MLPerf log (--mllog); known on rank 0, the only writer.
bool check_mllog(Communicator& world, const TrainConfig& config) {
  bool write_mllog = false;
  if (!config.mllog.empty())
    check_on_root(world, 0, [&] { write_mllog = mllog_should_write(config.mllog, !config.resume.empty()); });
  return write_mllog;
}

// The checkpoint that --resume names, checked against this run (the same run, continued in the same
// results file) before anything is written; none without --resume.
std::unique_ptr<Checkpoint> read_resume(Communicator& world, const TrainConfig& config) {
  std::unique_ptr<Checkpoint> resume;
  if (config.resume.empty()) return resume;
  run_collectively(world, [&] { resume = std::make_unique<Checkpoint>(read_checkpoint(config.resume)); });
  check_same_checkpoint_on_ranks(world, *resume, config.resume);
  run_collectively(world, [&] { check_resume(*resume, config, world.size()); });
  if (!config.out.empty()) {
    check_on_root(world, 0, [&] { check_results_continuation(config.out, *resume, config.resume, world.size()); });
  }
  return resume;
}

// The run's MLPerf log, opened on rank 0 when it writes one: from here on the set-up is MLPerf's init
// interval.
std::unique_ptr<MlLog> open_mllog(Communicator& world, const TrainConfig& config, bool write_mllog) {
  std::unique_ptr<MlLog> mllog;
  if (!config.mllog.empty()) {
    check_on_root(world, 0, [&] {
      if (write_mllog)
        mllog = std::make_unique<MlLog>(config.mllog, config.model, std::to_string(world.size()) + "x" + name_of(config.device));
    });
  }
  return mllog;
}

// The data, read while the CUDA context starts beside it.
TrainTest load_data(MpiSession& session, const TrainConfig& config, const DatasetSpec& data_spec) {
  MpiCommunicator& world = session.world();
  CudaContextStart context_start(config, session.local_rank());
  StartupSpan data_startup(StartupPart::data);
  TrainTest data = load_training_data(world, config, data_spec, world.size());
  data_startup.stop();
  context_start.wait();
  return data;
}

std::unique_ptr<Engine> build_engine(MpiSession& session, const TrainConfig& config, const TrainTest& data) {
  if (config.device == Device::Cpu) share_blas_threads(session.local_size());
  const EngineBuildTimer engine_startup;
  return make_engine(config, data.train, data.test, session.world(), session.local_rank(), session.local_size());
}

void log_run_line(MpiSession& session, const TrainConfig& config, const RuntimeInfo& info, const Engine& engine) {
  const int world_size = session.world().size();
  log0("scalebench train: %s on %s, %d rank(s) on %d node(s), %s, %lld parameters, batch %lld per rank (%s scaling)\n",
       config.model.c_str(), config.data.c_str(), world_size, session.node_count(), info.rank_devices[0].c_str(),
       static_cast<long long>(engine.describe().parameter_count), static_cast<long long>(config.per_rank_batch(world_size)),
       scaling_name(config.scaling));
}

// The results file on rank 0 (--out; a resumed run continues its file); none elsewhere or without --out.
std::unique_ptr<ResultsFile> open_results(MpiSession& session, const TrainConfig& config, const RuntimeInfo& info,
                                          bool resumed) {
  MpiCommunicator& world = session.world();
  if (config.out.empty() || world.rank() != 0) return nullptr;
  return std::make_unique<ResultsFile>(config.out, make_run_metadata(session, info, config, world.size()),
                                       resumed ? ResultsOpen::Continue : ResultsOpen::Create);
}

// What the FLOPs line and the results file say of the model and the devices.
struct ModelFigures {
  double flops_per_sample;
  double peak_tflops;          // this rank's device
  double slowest_peak_tflops;  // the slowest rank's
};

// Collective on every rank; the figures go into the results file where there is one.
ModelFigures measure_model(Communicator& world, const TrainConfig& config, const TrainTest& data, Engine& engine,
                           ResultsFile* results) {
  const Dataset& train = data.train;
  ModelFigures figures{};
  figures.flops_per_sample =
      training_flops_per_sample(build_model(config.model, ModelInput{train.channels, train.height, train.width, train.num_classes}),
                                Shape{train.channels, train.height, train.width});
  figures.peak_tflops = engine.measurements().peak_tflops();
  figures.slowest_peak_tflops = world.allreduce_min(figures.peak_tflops);
  if (results) {
    const NamedValue model_figures[] = {{"training_flops_per_sample", figures.flops_per_sample},
                                        {"peak_tflops_per_device", figures.slowest_peak_tflops},
                                        {"parameter_count", static_cast<double>(engine.describe().parameter_count)}};
    results->write_root_attributes(model_figures);
  }
  return figures;
}

// The engine torn down before the results file closes, so that the file records what the teardown took.
void shut_down_engine(std::unique_ptr<Engine>& engine) {
  const ShutdownSpan engine_shutdown(ShutdownPart::engine);
  engine.reset();
}

void close_results(ResultsFile& results, const RunSummary& run, const StartupReport& startup, const RunStepSplit& step_split) {
  const ShutdownSpan results_shutdown(ShutdownPart::results);
  std::vector<NamedValue> totals = run_attributes(run);
  if (!run.epochs.empty())
    for (NamedValue& part : step_split_attributes(step_split)) totals.push_back(std::move(part));
  totals.push_back({shutdown_attribute_name(ShutdownPart::engine), shutdown_seconds(ShutdownPart::engine)});
  for (NamedValue& part : startup_attributes(startup)) totals.push_back(std::move(part));
  // complete = 0 when a stop signal or a diverged loss ended the run: its epochs are not all there.
  results.close(!run.interrupted && !run.diverged, totals);
}

// The last epoch's rate against the model's FLOPs and the devices' peak, its clocks and its memory.
void log_last_epoch(const EpochSummary& last, const ModelFigures& model, int world_size) {
  const FlopsRate rate = flops_rate(model.flops_per_sample, last.images_per_s, model.peak_tflops, world_size);
  log0("model FLOPs: %.3f GFLOP per training sample (3 x forward); last epoch %.3g TFLOP/s", model.flops_per_sample / 1e9,
       rate.achieved_tflops);
  if (std::isfinite(rate.mfu)) log0(", MFU %.1f%% of the measured %.0f TFLOP/s per device", 100.0 * rate.mfu, model.peak_tflops);
  log0("\n");
  if (const std::string clocks = clocks_line(last.clocks); !clocks.empty()) log0("%s\n", clocks.c_str());
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const EpochRow& measured = last.measured;
  if (measured.peak_allocated_bytes >= 0)  // both peaks are the run's: they only grow
    log0("device memory: at most %.2f GiB allocated (PyTorch's max_memory_allocated measure), %.2f GiB in use, on the "
         "largest rank\n",
         static_cast<double>(measured.peak_allocated_bytes) / kGiB, static_cast<double>(measured.peak_memory_bytes) / kGiB);
}

void log_run_end(const TrainConfig& config, const RunSummary& run, const ModelFigures& model, int world_size,
                 const StartupReport& startup, const RunStepSplit& step_split) {
  log0("done: %d epoch(s), %s; best test accuracy %.2f%%%s%s\n", run.epochs_run, run.stop_reason.c_str(),
       100.0 * run.best_accuracy, config.out.empty() ? "" : "; results in ", config.out.c_str());
  if (!run.epochs.empty()) log_last_epoch(run.epochs.back(), model, world_size);
  if (std::isfinite(startup.to_first_step)) log0("%s\n", startup_line(startup).c_str());  // a step ran
  if (!run.epochs.empty()) log0("%s\n", summary_line(run, config.target_accuracy).c_str());
  if (!run.epochs.empty()) log0("%s\n%s\n", run_straggler_line(run).c_str(), step_split_line(step_split).c_str());
}

int exit_code(const RunSummary& run) {
  if (run.interrupted) return kExitInterrupted;
  return run.diverged ? kExitDiverged : 0;
}
}  // namespace

int train_command(MpiSession& session, const std::vector<std::string>& args, const std::string& command_line) {
  MpiCommunicator& world = session.world();
  StartupSpan setup_startup(StartupPart::setup);
  // Every check that can fail runs collectively, so that a rank that differs (its arguments, files or
  // memory) stops every rank with one sentence instead of leaving them in a collective.
  std::optional<CliConfig> cli = parse_command(session, "train", kTrain,
                                               "Data-parallel training of one model; one process per GPU (or CPU rank).",
                                               args, command_line);
  if (!cli) return 0;  // --help
  TrainConfig& config = cli->train;

  // Cheap checks first, in the order a user would fix them: values, ranks, output, device, then data.
  const DatasetSpec data_spec = check_values(world, config);
  const auto output_locks = prepare_outputs(world, {config.out, config.checkpoint_path(), config.checkpoint, config.trace}, config.resume);
  const std::unique_ptr<TableExport> exported = prepare_table_export(world, config, {"epochs", "summary"});
  const bool write_mllog = check_mllog(world, config);
  const std::unique_ptr<Checkpoint> resume = read_resume(world, config);
  if (resume && resume_is_finished(*resume, config)) {
    log0("checkpoint %s: the run is finished (%d of %d epochs done); nothing to resume, nothing changed\n",
         config.resume.c_str(), resume->loop.epoch, config.epochs);
    return 0;
  }
  run_collectively(world, [&] { check_device_available(config, session.local_size()); });
  const std::unique_ptr<MlLog> mllog = open_mllog(world, config, write_mllog);
  setup_startup.stop();

  const TrainTest data = load_data(session, config, data_spec);
  const DataIdentity identity = data_identity(config.data, data);
  if (resume) run_collectively(world, [&] { check_same_data(resume->data, identity, config.resume); });
  std::unique_ptr<Engine> engine = build_engine(session, config, data);
  const RuntimeInfo info = gather_runtime_info(session, config.device == Device::Cuda);
  log_run_line(session, config, info, *engine);

  const std::unique_ptr<ResultsFile> results = open_results(session, config, info, resume != nullptr);
  const ModelFigures model = measure_model(world, config, data, *engine, results.get());
  ResultsObserver results_observer(results ? &results->main_run() : nullptr);
  ExportingObserver exporting_observer(exported.get());
  TrainObservers observer{&results_observer, &exporting_observer};
  const RunSummary run = train({config, world, *engine, &observer, resume.get(), identity, mllog.get()});
  mark_training_end();
  if (exported) export_run_summary(*exported, run);
  const StartupReport startup = gather_startup(world);
  shut_down_engine(engine);
  const RunStepSplit step_split = split_run_step(run, config, kTrainSettleEpochs);  // root's; the others' say nothing
  if (results) close_results(*results, run, startup, step_split);
  log_run_end(config, run, model, world.size(), startup, step_split);
  return exit_code(run);
}

}  // namespace sb
