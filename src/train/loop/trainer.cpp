#include "train/loop/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "comm/collective_watchdog.h"
#include "core/error.h"
#include "core/fault_injection.h"
#include "core/log.h"
#include "core/startup_clock.h"
#include "core/stop_signal.h"
#include "data/sampler.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/run_checkpoints.h"
#include "train/collective.h"
#include "train/engines/micro_batches.h"
#include "train/loop/warm_up.h"
#include "train/reporting/run_reporting.h"
#include "train/run/early_stop.h"
#include "train/run/train_observers.h"
#include "train/run_setup.h"

namespace sb {
namespace {
double seconds_since(TrainClock::time_point t0) { return std::chrono::duration<double>(TrainClock::now() - t0).count(); }

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

// The checks below agree across `comm` (a `scale` configuration is part of the job): one sentence.
void check_every_rank_has_samples(Communicator& comm, int64_t train_size) {
  run_collectively(comm, [&] {
    if (train_size < comm.size()) {
      throw UserError("the training set has " + std::to_string(train_size) + " samples but the job has " +
                      std::to_string(comm.size()) + " ranks; use fewer ranks or more data (--train-limit)");
    }
  });
}

void check_batch_fits(Communicator& comm, const DistributedSampler& sampler, int64_t per_rank_batch, bool drop_last) {
  run_collectively(comm, [&] {
    if (num_batches(sampler.num_samples(), per_rank_batch, drop_last) == 0) {
      throw UserError("--batch-size gives " + std::to_string(per_rank_batch) + " samples per rank but each rank has only " +
                      std::to_string(sampler.num_samples()) + " per epoch with --drop-last; lower the batch size");
    }
  });
}

// The run state of `resume` restored into the engine, and where its loop stands; the start without one.
LoopState resume_from(const Checkpoint* resume, Communicator& comm, Engine& engine) {
  if (!resume) return {};
  restore_checkpoint(*resume, comm, engine);
  const LoopState& start = resume->loop;
  log0("resuming at epoch %d, step %lld (global step %lld)\n", start.epoch + 1, static_cast<long long>(start.step_in_epoch),
       static_cast<long long>(start.global_step));
  return start;
}

// The warm-up (train/loop/warm_up.h) on the steps of the first epoch to run.
void warm_up_on_first_epoch(const TrainConfig& config, Engine& engine, const DistributedSampler& sampler, int64_t per_rank_batch,
                            const LoopState& start, const LrSchedule& schedule, const std::vector<int64_t>& test_indices) {
  const auto first_steps = step_batches(sampler.indices(start.epoch), per_rank_batch, config.accumulate_steps, config.drop_last);
  const int64_t steps = static_cast<int64_t>(first_steps.size());
  warm_up(engine, first_steps, StepInfo{start.epoch, start.global_step, 0, schedule.lr(start.epoch, 0, steps)}, test_indices,
          config.eval_batch_size);
}

// Evaluates this rank's test shard, and reduces the epoch's training and test totals over the ranks
// (collective); the evaluation's time, the slowest rank's, holds the reductions.
void evaluate_epoch(EpochSummary& s, Communicator& comm, Engine& engine, TrainObserver& observers,
                    std::span<const int64_t> test_indices) {
  const auto eval_start = TrainClock::now();
  observers.on_evaluation_start(s.epoch);
  const EvalTotals my_test = engine.evaluate(test_indices);
  observers.on_evaluation_end(s.epoch);
  const EvalTotals test = reduce_totals(comm, my_test);
  const EvalTotals trained = reduce_totals(comm, engine.take_train_totals());
  s.eval_seconds = comm.allreduce_max(seconds_since(eval_start));
  s.train_loss = trained.count ? trained.loss_sum / static_cast<double>(trained.count) : NAN;
  s.train_accuracy = trained.count ? static_cast<double>(trained.correct) / static_cast<double>(trained.count) : NAN;
  s.test_loss = test.count ? test.loss_sum / static_cast<double>(test.count) : NAN;
  s.test_accuracy = test.count ? static_cast<double>(test.correct) / static_cast<double>(test.count) : NAN;
}

// The epoch's training wall times and samples over the ranks (collective).
void time_epoch(EpochSummary& s, Communicator& comm, double my_wall, int64_t my_samples) {
  s.wall_max = comm.allreduce_max(my_wall);
  s.wall_min = comm.allreduce_min(my_wall);
  s.wall_mean = comm.allreduce_avg(my_wall);
  s.global_samples = comm.allreduce_sum(my_samples);
  s.images_per_s = s.global_samples / s.wall_max;
  s.rank_wall_times = comm.gather(my_wall, 0);
  if (s.steps == s.steps_resumed) {  // resumed after the epoch's last step: nothing of it was timed here
    s.wall_max = s.wall_mean = s.wall_min = s.images_per_s = NAN;
    for (double& t : s.rank_wall_times) t = NAN;
  }
}

// The epoch into the run's summary and the early-stopping rules' state (before the divergence check:
// that epoch was evaluated too). Collective when the epoch reached the target.
void record_epoch(RunSummary& run, StopState& stop_state, const EpochSummary& s, const StopRules& rules, Communicator& comm,
                  bool resumed) {
  run.epochs.push_back(s);
  run.epochs_run = s.epoch + 1;
  run.final_accuracy = s.test_accuracy;
  stop_state = after_evaluation(stop_state, s.test_accuracy, rules);
  run.best_accuracy = stop_state.best_accuracy;
  if (stop_state.evaluations_at_target > 0 && !std::isfinite(run.time_to_target)) {
    run.time_to_target = s.elapsed_seconds;
    // Every rank reached the target together (the accuracy is reduced): a collective is safe here.
    const double since_start = comm.allreduce_max(seconds_since_process_start());
    if (!resumed) run.wall_to_target = since_start;
  }
}

std::string divergence_reason(const TrainConfig& config, double train_loss, int epoch) {
  return "the training loss became " + std::string(std::isnan(train_loss) ? "NaN" : "infinite") + " in epoch " +
         std::to_string(epoch + 1) + "; lower --lr" + (config.precision == Precision::FP32 ? "" : " or use --precision fp32");
}
}  // namespace

RunSummary train(const TrainConfig& config, Communicator& comm, Engine& engine, TrainObserver* results,
                 const Checkpoint* resume, const DataIdentity* data, MlLog* mllog) {
  const int world = comm.size(), rank = comm.rank();
  const int64_t per_rank_batch = config.per_rank_batch(world);
  const int64_t test_n = config.test_limit > 0 ? std::min(config.test_limit, engine.test_size()) : engine.test_size();
  check_every_rank_has_samples(comm, engine.train_size());
  DistributedSampler sampler(engine.train_size(), world, rank, true, config.seed, config.drop_last, engine.train_shard_sizes());
  check_batch_fits(comm, sampler, per_rank_batch, config.drop_last);
  const auto schedule = schedule_for(config, world);
  log0("%s", training_line(config, per_rank_batch, world).c_str());
  const std::vector<int64_t> test_indices = test_shard(test_n, rank, world);
  const LoopState start = resume_from(resume, comm, engine);
  RunSummary run;
  int64_t step = start.global_step;
  const StopRules rules = stop_rules(config);
  StopState stop_state = start.stop;
  run.best_accuracy = stop_state.best_accuracy;
  run.time_to_target = start.target_reached_s;
  double elapsed = start.elapsed_s;
  // Where the loop stands after `steps` steps of `epoch`, its epoch's clock at `epoch_s`.
  const auto at = [&](int epoch, int64_t steps, double epoch_s) {
    return LoopState{epoch, steps, step, elapsed + epoch_s, stop_state, run.time_to_target};
  };
  RunReporting reporting(config, comm, engine, results, mllog);
  // Before the clock and before the stop checkpointer, which must never see the warm-up's parameters.
  if (config.untimed_init_on() && start.epoch < config.epochs)
    warm_up_on_first_epoch(config, engine, sampler, per_rank_batch, start, *schedule, test_indices);
  RunCheckpoints checkpoints(config, comm, engine, data ? *data : DataIdentity{});
  TrainObservers observers{&checkpoints, &reporting};
  observers.on_run_start(RunStart{config, per_rank_batch * world, engine.train_size(), test_n, TrainClock::now()});
  for (int epoch = start.epoch; epoch < config.epochs; ++epoch) {
    // One entry per optimizer step: --accumulate-steps micro-batches of the per-rank batch.
    const auto batches = step_batches(sampler.indices(epoch), per_rank_batch, config.accumulate_steps, config.drop_last);
    EpochSummary s;
    s.epoch = epoch;
    s.steps = static_cast<int64_t>(batches.size());
    // The resumed epoch starts where the checkpoint stopped; its row says how many steps came before.
    const size_t first_batch = epoch == start.epoch ? static_cast<size_t>(std::min<int64_t>(start.step_in_epoch, s.steps)) : 0;
    s.steps_resumed = static_cast<int64_t>(first_batch);
    s.learning_rate = schedule->lr(epoch, s.steps - 1, s.steps);  // the epoch's last step, run here or not
    comm.barrier();  // start the epoch together, so the spread across ranks is the ranks' own
    observers.on_epoch_start(EpochStart{epoch, s.steps, s.steps_resumed, step});
    const auto epoch_start = TrainClock::now();
    uint64_t position = 0;  // this rank's samples so far in the epoch (keys the augmentation)
    int64_t my_samples = 0;
    for (size_t b = 0; b < first_batch; ++b) position += static_cast<uint64_t>(batches[b].size());
    observers.on_resume_point({at(epoch, s.steps_resumed, 0), epoch_start});
    for (size_t b = first_batch; b < batches.size(); ++b) {
      s.learning_rate = schedule->lr(epoch, static_cast<int64_t>(b), s.steps);
      const StepInfo info{epoch, step, position, s.learning_rate};
      set_collective_position(epoch, static_cast<int64_t>(b));
      inject_fault_if_asked("step", static_cast<long>(step - start.global_step));
      observers.on_step_start(info);
      const PhaseTimes times = engine.train_step(batches[b], info);
      observers.on_step_end(times);
      const int64_t steps_done = static_cast<int64_t>(times.abandoned ? b : b + 1);
      if (!times.abandoned) {  // an abandoned step changed nothing: the checkpoint below is the one before it
        if (times.valid) observers.on_step_times(times);
        position += static_cast<uint64_t>(batches[b].size());
        ++step;
        observers.on_resume_point({at(epoch, steps_done, seconds_since(epoch_start)), epoch_start});
      }
      // Every rank learns of a signal that reached any of them, and all stop after the same step.
      if (const int signal = comm.allreduce_max(stop_signal_received()); signal != 0) {
        engine.synchronize();
        run.interrupted = true;
        run.stop_reason = "stopped by signal " + std::to_string(signal) + " after step " + std::to_string(steps_done) +
                          " of epoch " + std::to_string(epoch + 1) + (times.abandoned ? " (the step under way was abandoned)" : "");
        observers.on_run_end(RunEnd{run, at(epoch, steps_done, seconds_since(epoch_start))});  // checkpoints it
        if (config.resumable) {
          run.stop_reason += "; checkpoint " + checkpoints.path() + " (continue with --resume " + checkpoints.path() + ")";
        }
        return run;
      }
      my_samples += static_cast<int64_t>(batches[b].size());
      observers.on_step_progress(
          {epoch, steps_done, s.steps, steps_done - s.steps_resumed, my_samples, s.learning_rate, epoch_start});
    }
    engine.synchronize();
    if (const PhaseTimes last = engine.measurements().drain_step_times(); last.valid) observers.on_step_times(last);
    const double my_wall = seconds_since(epoch_start);
    observers.on_epoch_trained(EpochTrained{epoch, my_wall});
    evaluate_epoch(s, comm, engine, observers, test_indices);
    time_epoch(s, comm, my_wall, my_samples);
    observers.measure_epoch(s);
    if (s.steps > s.steps_resumed) elapsed += s.wall_max;  // the checkpoint's elapsed_s holds the steps before the resume
    elapsed += s.eval_seconds;
    s.elapsed_seconds = elapsed;
    {
      const auto hdf5 = checkpoints.exclusive();
      observers.on_epoch_end(s);
    }
    record_epoch(run, stop_state, s, rules, comm, resume != nullptr);
    if (!std::isfinite(s.train_loss)) {
      run.diverged = true;
      run.stop_reason = divergence_reason(config, s.train_loss, epoch);
    } else {
      if (config.checkpoint_every > 0 && (epoch + 1) % config.checkpoint_every == 0) checkpoints.save(at(epoch + 1, 0, 0));
      if (const StopRule rule = rule_met(stop_state, rules); rule != StopRule::None) run.stop_reason = stop_reason(rule, rules);
    }
    observers.on_epoch_closed(epoch);
    if (!run.stop_reason.empty()) break;
  }
  if (run.stop_reason.empty()) run.stop_reason = "completed";
  observers.on_run_end(RunEnd{run, at(run.epochs_run, 0, 0)});
  return run;
}

}  // namespace sb
