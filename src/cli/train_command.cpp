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

namespace sb {

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
  DatasetSpec data_spec;
  run_collectively(world, [&] {
    config.validate();
    config.per_rank_batch(world.size());
    data_spec = parse_dataset_spec(config.data);
    model_info(config.model);
  });
  agree_on_configuration(world, config.to_json(), config.collective_timeout);
  const auto output_locks = prepare_outputs(world, {config.out, config.checkpoint_path(), config.checkpoint, config.trace}, config.resume);
  const std::unique_ptr<TableExport> exported = prepare_table_export(world, config, {"epochs", "summary"});
  bool write_mllog = false;  // known on rank 0, the only writer
  if (!config.mllog.empty())
    check_on_root(world, 0, [&] { write_mllog = mllog_should_write(config.mllog, !config.resume.empty()); });
  std::unique_ptr<Checkpoint> resume;
  if (!config.resume.empty()) run_collectively(world, [&] { resume = std::make_unique<Checkpoint>(read_checkpoint(config.resume)); });
  if (resume) {  // the same run, continued in the same results file; checked before anything is written
    check_same_checkpoint_on_ranks(world, *resume, config.resume);
    run_collectively(world, [&] { check_resume(*resume, config, world.size()); });
    if (!config.out.empty()) {
      check_on_root(world, 0, [&] { check_results_continuation(config.out, *resume, config.resume, world.size()); });
    }
    if (resume_is_finished(*resume, config)) {
      log0("checkpoint %s: the run is finished (%d of %d epochs done); nothing to resume, nothing changed\n",
           config.resume.c_str(), resume->loop.epoch, config.epochs);
      return 0;
    }
  }
  run_collectively(world, [&] { check_device_available(config, session.local_size()); });
  std::unique_ptr<MlLog> mllog;  // from here on the set-up is MLPerf's init interval
  if (!config.mllog.empty()) {
    check_on_root(world, 0, [&] {
      if (write_mllog)
        mllog = std::make_unique<MlLog>(config.mllog, config.model, std::to_string(world.size()) + "x" + name_of(config.device));
    });
  }

  setup_startup.stop();
  CudaContextStart context_start(config, session.local_rank());  // beside the reading of the data
  StartupSpan data_startup(StartupPart::data);
  const TrainTest data = load_training_data(world, config, data_spec, world.size());
  data_startup.stop();
  context_start.wait();
  const DataIdentity identity = data_identity(config.data, data);
  if (resume) run_collectively(world, [&] { check_same_data(resume->data, identity, config.resume); });

  if (config.device == Device::Cpu) share_blas_threads(session.local_size());
  std::unique_ptr<Engine> engine = [&] {
    const EngineBuildTimer engine_startup;
    return make_engine(config, data.train, data.test, world, session.local_rank(), session.local_size());
  }();
  const RuntimeInfo info = gather_runtime_info(session, config.device == Device::Cuda);
  log0("scalebench train: %s on %s, %d rank(s) on %d node(s), %s, %lld parameters, batch %lld per rank (%s scaling)\n",
       config.model.c_str(), config.data.c_str(), world.size(), session.node_count(), info.rank_devices[0].c_str(),
       static_cast<long long>(engine->parameter_count()), static_cast<long long>(config.per_rank_batch(world.size())),
       scaling_name(config.scaling));

  std::unique_ptr<ResultsFile> results;
  RunWriter* writer = nullptr;
  if (!config.out.empty() && world.rank() == 0) {
    results = std::make_unique<ResultsFile>(config.out, make_run_metadata(session, info, config, world.size()),
                                            resume ? ResultsOpen::Continue : ResultsOpen::Create);
    writer = &results->main_run();
  }
  const double flops_per_sample = training_flops_per_sample(
      build_model(config.model, ModelInput{data.train.channels, data.train.height, data.train.width, data.train.num_classes}),
      Shape{data.train.channels, data.train.height, data.train.width});
  const double peak_tflops = engine->measurements().peak_tflops();
  const double slowest_peak_tflops = world.allreduce_min(peak_tflops);  // collective on every rank either way
  if (results) {
    const NamedValue model_figures[] = {{"training_flops_per_sample", flops_per_sample},
                                        {"peak_tflops_per_device", slowest_peak_tflops},
                                        {"parameter_count", static_cast<double>(engine->parameter_count())}};
    results->write_root_attributes(model_figures);
  }
  ResultsObserver results_observer(writer);
  ExportingObserver exporting_observer(exported.get());
  TrainObservers observer{&results_observer, &exporting_observer};
  const RunSummary run = train(config, world, *engine, &observer, resume.get(), &identity, mllog.get());
  mark_training_end();
  if (exported) export_run_summary(*exported, run);
  const StartupReport startup = gather_startup(world);
  {
    // Before the results file closes, so that the file records what the teardown took.
    const ShutdownSpan engine_shutdown(ShutdownPart::engine);
    engine.reset();
  }
  if (results) {
    const ShutdownSpan results_shutdown(ShutdownPart::results);
    std::vector<NamedValue> totals = {{"total_time_s", run.elapsed_seconds()},
                                      {"total_images", run.images()},
                                      {"overall_images_per_s", run.images_per_s()},
                                      {"best_test_accuracy", run.best_accuracy},
                                      {"time_to_target_s", run.time_to_target},
                                      {"wall_to_target_s", run.wall_to_target},
                                      {shutdown_attribute_name(ShutdownPart::engine), shutdown_seconds(ShutdownPart::engine)}};
    for (NamedValue& part : startup_attributes(startup)) totals.push_back(std::move(part));
    // complete = 0 when a stop signal or a diverged loss ended the run: its epochs are not all there.
    results->close(!run.interrupted && !run.diverged, totals);
  }
  log0("done: %d epoch(s), %s; best test accuracy %.2f%%%s%s\n", run.epochs_run, run.stop_reason.c_str(),
       100.0 * run.best_accuracy, config.out.empty() ? "" : "; results in ", config.out.c_str());
  if (!run.epochs.empty()) {
    const FlopsRate rate = flops_rate(flops_per_sample, run.epochs.back().images_per_s, peak_tflops, world.size());
    log0("model FLOPs: %.3f GFLOP per training sample (3 x forward); last epoch %.3g TFLOP/s", flops_per_sample / 1e9,
         rate.achieved_tflops);
    if (std::isfinite(rate.mfu)) log0(", MFU %.1f%% of the measured %.0f TFLOP/s per device", 100.0 * rate.mfu, peak_tflops);
    log0("\n");
    if (const std::string clocks = clocks_line(run.epochs.back().clocks); !clocks.empty()) log0("%s\n", clocks.c_str());
    const EpochSummary& last = run.epochs.back();
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    if (std::isfinite(last.peak_allocated_bytes))  // both peaks are the run's: they only grow
      log0("device memory: at most %.2f GiB allocated (PyTorch's max_memory_allocated measure), %.2f GiB in use, on the "
           "largest rank\n",
           last.peak_allocated_bytes / kGiB, last.peak_memory_bytes / kGiB);
  }
  if (std::isfinite(startup.to_first_step)) log0("%s\n", startup_line(startup).c_str());  // a step ran
  if (!run.epochs.empty()) log0("%s\n", summary_line(run, config.target_accuracy).c_str());
  if (run.interrupted) return kExitInterrupted;
  return run.diverged ? kExitDiverged : 0;
}

}  // namespace sb
