#include "train/loop/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "comm/collective_watchdog.h"
#include "core/error.h"
#include "core/fault_injection.h"
#include "core/log.h"
#include "core/nvtx_ranges.h"
#include "core/startup_clock.h"
#include "data/sampler.h"
#include "metrics/bucket_ready_samples.h"
#include "metrics/chrome_trace.h"
#include "metrics/step_trace.h"
#include "train/checkpoint/checkpoint.h"
#include "train/loop/early_stop.h"
#include "train/loop/micro_batches.h"
#include "train/reporting/mllog.h"
#include "train/reporting/progress_line.h"
#include "train/collective.h"
#include "train/checkpoint/stop_checkpoint.h"
#include "train/run_setup.h"
#include "train/checkpoint/stop_signal.h"
#include "train/loop/warm_up.h"

namespace sb {
namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// This rank's shard of the test set: r, r+W, ... with no padding, so every sample counts once.
std::vector<int64_t> test_shard(int64_t n, int rank, int world) {
  std::vector<int64_t> out;
  for (int64_t i = rank; i < n; i += world) out.push_back(i);
  return out;
}

EvalTotals reduce_totals(Communicator& comm, const EvalTotals& local) {
  double loss = comm.allreduce_sum(local.loss_sum);
  int64_t counts[2] = {local.correct, local.count};
  comm.allreduce_sum(std::span<int64_t>(counts));
  return EvalTotals{loss, counts[0], counts[1]};
}

// The run's optimizer, schedule and batch as resolved (a model's recipe included), for the log.
std::string training_line(const TrainConfig& config, int64_t per_rank_batch, int world) {
  char text[320];
  std::string schedule = "no schedule";
  if (config.scheduler == ScheduleKind::Step) {
    std::snprintf(text, sizeof text, "StepLR (step size %d, gamma %g)", config.step_size, config.gamma);
    schedule = text;
  } else if (config.scheduler == ScheduleKind::Cosine) {
    std::snprintf(text, sizeof text, "cosine to %g (warm-up %g epochs)", config.min_lr, config.warmup_epochs);
    schedule = text;
  }
  const long long per_step = static_cast<long long>(per_rank_batch) * config.accumulate_steps * world;
  std::string batch = "batch " + std::to_string(per_rank_batch) + " per rank";
  if (config.accumulate_steps > 1)
    batch = std::to_string(config.accumulate_steps) + " micro-batches of " + std::to_string(per_rank_batch) + " per rank per step";
  std::snprintf(text, sizeof text, "training: %s lr %g, %s, %s (%lld images per optimizer step)\n", optimizer_name(config.optimizer),
                config.lr, schedule.c_str(), batch.c_str(), per_step);
  return text;
}

// Without the warm-up the first steps of a process are not steady: the eager ones grow the layers'
// buffers, the third captures the CUDA graphs. Bucket ready times are summarised over the steps after
// them either way (after a warm-up, three steps of hundreds).
constexpr int64_t kUnsteadySteps = 3;

// Each bucket's ready time, the slowest rank's; empty unless every rank has the same buckets timed.
std::vector<double> slowest_bucket_ready(Communicator& comm, std::vector<double> local) {
  const int64_t n = static_cast<int64_t>(local.size());
  int64_t counts[2] = {n, -n};  // max of both: the largest and the smallest count
  comm.allreduce_max(std::span<int64_t>(counts));
  if (counts[0] != -counts[1] || n == 0) return {};
  comm.allreduce_max(std::span<double>(local));
  return local;
}

// MLPerf's run_stop status: "success" when the run reached its target, or ran every epoch without one.
const char* mllog_status(const RunSummary& run, double target_accuracy) {
  if (run.interrupted || run.diverged) return "aborted";
  if (target_accuracy > 0) return std::isfinite(run.time_to_target) ? "success" : "aborted";
  return run.stop_reason == "completed" ? "success" : "aborted";
}
}  // namespace

double RunSummary::images() const {
  double n = 0;
  for (const EpochSummary& e : epochs) n += static_cast<double>(e.global_samples);
  return n;
}

double RunSummary::train_seconds() const {
  double t = 0;
  for (const EpochSummary& e : epochs)
    if (std::isfinite(e.wall_max)) t += e.wall_max;  // NaN: resumed after the epoch's last step, nothing timed
  return t;
}

std::string summary_line(const RunSummary& run, double target_accuracy) {
  char text[256];
  std::snprintf(text, sizeof text, "summary: %.3f s in total, %s images at %s img/s, best test accuracy %.2f%%",
                run.elapsed_seconds(), with_thousands(run.images()).c_str(), with_thousands(run.images_per_s()).c_str(),
                100.0 * run.best_accuracy);
  std::string line = text;
  if (target_accuracy > 0) {
    if (std::isfinite(run.time_to_target)) {
      std::snprintf(text, sizeof text, ", %.2f%% reached after %.3f s", 100.0 * target_accuracy, run.time_to_target);
      line += text;
      if (std::isfinite(run.wall_to_target)) {
        std::snprintf(text, sizeof text, " (%.3f s from process start)", run.wall_to_target);
        line += text;
      }
    } else {
      std::snprintf(text, sizeof text, ", %.2f%% not reached", 100.0 * target_accuracy);
      line += text;
    }
  }
  return line;
}

RunSummary train(const TrainConfig& config, Communicator& comm, Engine& engine, EpochObserver* observer,
                 const Checkpoint* resume, const DataIdentity* data, MlLog* mllog) {
  const int world = comm.size(), rank = comm.rank();
  const int64_t per_rank_batch = config.per_rank_batch(world);
  const int64_t test_n = config.test_limit > 0 ? std::min(config.test_limit, engine.test_size()) : engine.test_size();
  // The checks below agree across `comm` (a `scale` configuration is part of the job): one sentence.
  run_collectively(comm, [&] {
    if (engine.train_size() < world) {
      throw UserError("the training set has " + std::to_string(engine.train_size()) + " samples but the job has " +
                      std::to_string(world) + " ranks; use fewer ranks or more data (--train-limit)");
    }
  });
  DistributedSampler sampler(engine.train_size(), world, rank, true, config.seed, config.drop_last);
  const int64_t steps_per_epoch = num_batches(sampler.num_samples(), per_rank_batch, config.drop_last);
  run_collectively(comm, [&] {
    if (steps_per_epoch == 0) {
      throw UserError("--batch-size gives " + std::to_string(per_rank_batch) + " samples per rank but each rank has only " +
                      std::to_string(sampler.num_samples()) + " per epoch with --drop-last; lower the batch size");
    }
  });
  const auto schedule = schedule_for(config, world);
  log0("%s", training_line(config, per_rank_batch, world).c_str());
  const std::vector<int64_t> test_indices = test_shard(test_n, rank, world);

  LoopState start;
  if (resume) {
    restore_checkpoint(*resume, comm, engine);
    start = resume->loop;
    log0("resuming at epoch %d, step %lld (global step %lld)\n", start.epoch + 1, static_cast<long long>(start.step_in_epoch),
         static_cast<long long>(start.global_step));
  }
  RunSummary run;
  int64_t step = start.global_step;
  const StopRules rules = stop_rules(config);
  StopState stop_state = start.stop;
  run.best_accuracy = stop_state.best_accuracy;
  run.time_to_target = start.target_reached_s;
  double elapsed = start.elapsed_s;
  const std::string checkpoint_path = config.checkpoint_path();
  const std::string config_json = config.to_json();
  const DataIdentity identity = data ? *data : DataIdentity{};
  std::unique_ptr<ChromeTrace> trace;
  // Each rank writes its own trace file, perhaps on node-local scratch that one node lacks: agree first.
  run_collectively(comm, [&] {
    if (config.trace.empty()) return;
    trace = std::make_unique<ChromeTrace>(trace_path(config.trace, rank), rank);
    name_trace_tracks(*trace);
  });
  // Before the clock and before the stop checkpointer, which must never see the warm-up's parameters.
  if (config.warm_up && start.epoch < config.epochs) {
    const auto first_steps = step_batches(sampler.indices(start.epoch), per_rank_batch, config.accumulate_steps, config.drop_last);
    const int64_t steps = static_cast<int64_t>(first_steps.size());
    warm_up(engine, first_steps, StepInfo{start.epoch, step, 0, schedule->lr(start.epoch, 0, steps)}, test_indices,
            config.eval_batch_size);
  }
  StopCheckpointer stopper(comm, engine, config_json, identity, checkpoint_path, config.resumable);
  if (mllog) mllog->run_start(config, per_rank_batch * world, engine.train_size(), test_n);
  ProgressSchedule progress(rank == 0 ? config.log_seconds : 0);  // rank 0 prints
  double last_eval_seconds = 0;
  const auto run_start = Clock::now();
  // Device-timed steps are placed by their timeline; host-timed phases are laid end to end from a cursor.
  double trace_cursor_us = 0;
  const double run_start_s = std::chrono::duration<double>(run_start.time_since_epoch()).count();
  BucketReadySamples bucket_ready;
  int64_t steps_timed_in_run = 0;
  double energy_before = engine.energy_joules();
  for (int epoch = start.epoch; epoch < config.epochs; ++epoch) {
    const NvtxRange epoch_range(nvtx_epoch_name(epoch));
    // One entry per optimizer step: --accumulate-steps micro-batches of the per-rank batch.
    const auto batches = step_batches(sampler.indices(epoch), per_rank_batch, config.accumulate_steps, config.drop_last);
    EpochSummary s;
    s.epoch = epoch;
    s.steps = static_cast<int64_t>(batches.size());
    // The resumed epoch starts where the checkpoint stopped; its row says how many steps came before.
    const size_t first_batch = epoch == start.epoch ? static_cast<size_t>(std::min<int64_t>(start.step_in_epoch, s.steps)) : 0;
    s.steps_resumed = static_cast<int64_t>(first_batch);
    const int64_t steps_run = s.steps - s.steps_resumed;  // by this process, the same on every rank
    s.first_sampled_step = step;
    s.learning_rate = schedule->lr(epoch, s.steps - 1, s.steps);  // the epoch's last step, run here or not
    const int64_t sampled = std::min<int64_t>(config.sample_steps, steps_run);
    std::vector<int64_t> my_steps(static_cast<size_t>(sampled * kPhaseCount));
    PhaseTimes phases;
    int64_t my_samples = 0;

    comm.barrier();  // start the epoch together, so the spread across ranks is the ranks' own
    engine.take_gpu_clocks();  // the clocks' window starts with the epoch's training
    if (mllog) mllog->epoch_start(epoch);
    progress.restart();
    const auto epoch_start = Clock::now();
    const double epoch_start_us = std::chrono::duration<double, std::micro>(epoch_start - run_start).count();
    trace_cursor_us = std::max(trace_cursor_us, epoch_start_us);
    uint64_t position = 0;    // this rank's samples so far in the epoch (keys the augmentation)
    int64_t timed_steps = 0;  // steps whose phase times have arrived (they may lag the step itself)
    auto record = [&](const PhaseTimes& t) {
      if (!t.valid) return;
      phases += t;
      if (trace) {
        if (t.timeline.on_device()) {
          trace_device_step(*trace, t.timeline, t.seconds, (t.timeline.start_s - run_start_s) * 1e6);
        } else {
          trace_cursor_us = trace_host_step(*trace, t.seconds, trace_cursor_us);
        }
      }
      if (++steps_timed_in_run > kUnsteadySteps) bucket_ready.add(ready_after_backward_start(t.timeline));
      if (timed_steps < sampled) {
        for (int p = 0; p < kPhaseCount; ++p) my_steps[static_cast<size_t>(timed_steps * kPhaseCount + p)] = std::llround(t.seconds[p] * 1e9);
      }
      ++timed_steps;
    };
    for (size_t b = 0; b < first_batch; ++b) position += static_cast<uint64_t>(batches[b].size());
    stopper.at_step_boundary(LoopState{epoch, static_cast<int64_t>(first_batch), step, elapsed, stop_state,
                                       run.time_to_target});
    for (size_t b = first_batch; b < batches.size(); ++b) {
      s.learning_rate = schedule->lr(epoch, static_cast<int64_t>(b), s.steps);
      StepInfo info{epoch, step, position, s.learning_rate};
      set_collective_position(epoch, static_cast<int64_t>(b));
      inject_fault_if_asked("step", static_cast<long>(step - start.global_step));
      const PhaseTimes times = [&] {
        const NvtxRange step_range(kNvtxStep);
        const FirstStepTimer first_step_startup;  // the process's first step ends its start-up
        return engine.train_step(batches[b], info);
      }();
      const size_t steps_done = times.abandoned ? b : b + 1;
      if (!times.abandoned) {  // an abandoned step changed nothing: the checkpoint below is the one before it
        record(times);
        position += static_cast<uint64_t>(batches[b].size());
        ++step;
        stopper.at_step_boundary(LoopState{epoch, static_cast<int64_t>(steps_done), step, elapsed + seconds_since(epoch_start),
                                           stop_state, run.time_to_target});
      }
      // Every rank learns of a signal that reached any of them, and all stop after the same step.
      if (const int signal = comm.allreduce_max(stop_signal_received()); signal != 0) {
        engine.synchronize();
        const LoopState here{epoch, static_cast<int64_t>(steps_done), step, elapsed + seconds_since(epoch_start),
                             stop_state, run.time_to_target};
        run.interrupted = true;
        run.stop_reason = "stopped by signal " + std::to_string(signal) + " after step " + std::to_string(steps_done) +
                          " of epoch " + std::to_string(epoch + 1) + (times.abandoned ? " (the step under way was abandoned)" : "");
        if (config.resumable) {
          if (!stopper.finish(here)) {  // the stop checkpointer's thread may have written this very point
            const auto hdf5 = stopper.exclusive();
            save_checkpoint(comm, engine, config_json, identity, here, checkpoint_path);
          }
          run.stop_reason += "; checkpoint " + checkpoint_path + " (continue with --resume " + checkpoint_path + ")";
        }
        if (mllog) mllog->run_stop(mllog_status(run, config.target_accuracy));
        return run;
      }
      my_samples += static_cast<int64_t>(batches[b].size());
      if (config.log_interval > 0 && (b + 1) % static_cast<size_t>(config.log_interval) == 0) {
        log0("  epoch %d step %zu/%zu lr %.4g\n", epoch + 1, b + 1, batches.size(), s.learning_rate);
      }
      if (progress.due(seconds_since(epoch_start))) {
        const EvalTotals so_far = engine.peek_train_totals();
        ProgressPoint point;
        point.epoch = epoch;
        point.epochs = config.epochs;
        point.step = static_cast<int64_t>(b + 1);
        point.steps = s.steps;
        point.steps_timed = static_cast<int64_t>(b + 1 - first_batch);
        point.epoch_seconds = seconds_since(epoch_start);
        point.images = my_samples * world;  // the sampler gives every rank as many samples
        point.ranks = world;
        point.rank_unit = config.device == Device::Cuda ? "GPU" : "rank";
        point.loss = so_far.count ? so_far.loss_sum / static_cast<double>(so_far.count) : NAN;
        point.eval_seconds = last_eval_seconds;
        log0("%s\n", progress_line(point, std::chrono::system_clock::now()).c_str());
      }
    }
    stopper.suspend();  // until the next epoch's first boundary: this epoch's row is yet to be written
    engine.synchronize();
    record(engine.drain_step_times());
    const double my_wall = seconds_since(epoch_start);
    const std::vector<GpuClocks> my_clocks = engine.take_gpu_clocks();

    if (mllog) mllog->evaluation_start(epoch);
    const auto eval_start = Clock::now();
    const EvalTotals test = reduce_totals(comm, [&] {
      const NvtxRange evaluation_range(kNvtxEvaluation);
      return engine.evaluate(test_indices);
    }());
    const EvalTotals trained = reduce_totals(comm, engine.take_train_totals());
    s.eval_seconds = comm.allreduce_max(seconds_since(eval_start));

    s.wall_max = comm.allreduce_max(my_wall);
    s.wall_min = comm.allreduce_min(my_wall);
    s.wall_mean = comm.allreduce_avg(my_wall);
    s.global_samples = comm.allreduce_sum(my_samples);
    s.images_per_s = s.global_samples / s.wall_max;
    s.train_loss = trained.count ? trained.loss_sum / static_cast<double>(trained.count) : NAN;
    s.train_accuracy = trained.count ? static_cast<double>(trained.correct) / static_cast<double>(trained.count) : NAN;
    s.test_loss = test.count ? test.loss_sum / static_cast<double>(test.count) : NAN;
    s.test_accuracy = test.count ? static_cast<double>(test.correct) / static_cast<double>(test.count) : NAN;
    for (int p = 0; p < kPhaseCount; ++p) {
      s.phases_max.seconds[p] = comm.allreduce_max(phases.seconds[p]);
      s.phases_mean.seconds[p] = comm.allreduce_avg(phases.seconds[p]);
    }
    s.bucket_ready_s = slowest_bucket_ready(comm, bucket_ready.medians());
    const double energy_now = engine.energy_joules();
    s.energy_joules = comm.allreduce_sum(energy_now - energy_before);
    energy_before = energy_now;
    s.peak_memory_bytes = comm.allreduce_max(engine.peak_memory_bytes());
    s.clocks = reduce_epoch_clocks(comm, my_clocks);
    s.rank_wall_times = comm.gather(my_wall, 0);
    // Only steps whose times arrived on every rank are sampled: no row of zeros stands for a step.
    s.sampled_steps = comm.allreduce_min(std::min(timed_steps, sampled));
    my_steps.resize(static_cast<size_t>(s.sampled_steps * kPhaseCount));
    s.step_phase_ns = comm.gather(std::span<const int64_t>(my_steps), 0);
    if (steps_run == 0) {  // resumed after the epoch's last step: nothing of it was timed here
      s.wall_max = s.wall_mean = s.wall_min = s.images_per_s = NAN;
      for (double& t : s.rank_wall_times) t = NAN;
      s.clocks = EpochClocks{};  // a window without a step says nothing of the clocks under load
    } else {
      elapsed += s.wall_max;  // the checkpoint's elapsed_s holds the steps before the resume
    }
    if (comm.allreduce_min(timed_steps) == 0) {
      for (int p = 0; p < kPhaseCount; ++p) s.phases_max.seconds[p] = s.phases_mean.seconds[p] = NAN;
    }
    elapsed += s.eval_seconds;
    if (trace) {
      trace->complete("train epoch", "epoch", epoch_start_us, my_wall * 1e6, kTrackEpochs, "{\"epoch\":" + std::to_string(epoch + 1) + "}");
      trace->complete("evaluate", "epoch", epoch_start_us + my_wall * 1e6, s.eval_seconds * 1e6, kTrackEpochs);
    }
    s.elapsed_seconds = elapsed;

    log0("epoch %3d/%d  time %8.3f s  train loss %.4f  test loss %.4f  test acc %6.2f%%  %s img/s  lr %.4g\n",
         epoch + 1, config.epochs, s.wall_max, s.train_loss, s.test_loss, 100.0 * s.test_accuracy,
         with_thousands(s.images_per_s).c_str(), s.learning_rate);
    if (observer) {
      const auto hdf5 = stopper.exclusive();
      observer->on_epoch(s);
    }
    if (mllog) mllog->evaluation_done(s);
    last_eval_seconds = s.eval_seconds;
    run.epochs.push_back(s);
    run.epochs_run = epoch + 1;
    run.final_accuracy = s.test_accuracy;

    // Before the divergence check: that epoch was evaluated too.
    stop_state = after_evaluation(stop_state, s.test_accuracy, rules);
    run.best_accuracy = stop_state.best_accuracy;
    if (stop_state.evaluations_at_target > 0 && !std::isfinite(run.time_to_target)) {
      run.time_to_target = elapsed;
      // Every rank reached the target together (the accuracy is reduced): a collective is safe here.
      const double since_start = comm.allreduce_max(seconds_since_process_start());
      if (!resume) run.wall_to_target = since_start;
    }
    if (!std::isfinite(s.train_loss)) {
      run.diverged = true;
      run.stop_reason = "the training loss became " + std::string(std::isnan(s.train_loss) ? "NaN" : "infinite") +
                        " in epoch " + std::to_string(epoch + 1) + "; lower --lr" +
                        (config.precision == Precision::FP32 ? "" : " or use --precision fp32");
      break;
    }
    if (config.checkpoint_every > 0 && (epoch + 1) % config.checkpoint_every == 0) {
      const auto hdf5 = stopper.exclusive();
      save_checkpoint(comm, engine, config_json, identity,
                      LoopState{epoch + 1, 0, step, elapsed, stop_state, run.time_to_target}, checkpoint_path);
    }
    if (const StopRule rule = rule_met(stop_state, rules); rule != StopRule::None) {
      run.stop_reason = stop_reason(rule, rules);
      break;
    }
  }
  if (run.stop_reason.empty()) run.stop_reason = "completed";
  if (mllog) mllog->run_stop(mllog_status(run, config.target_accuracy));
  return run;
}

}  // namespace sb
