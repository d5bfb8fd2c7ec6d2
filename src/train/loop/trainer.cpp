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
  const EvalTotals trained = reduce_totals(comm, engine.train_totals(TotalsRead::Take));
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

// The run's fixed parts and the state its epochs carry on: what every step of the loop below reads.
struct Loop {
  const TrainConfig& config;
  Communicator& comm;
  Engine& engine;
  const DistributedSampler& sampler;
  const LrSchedule& schedule;
  const std::vector<int64_t>& test_indices;
  const int64_t per_rank_batch;
  const LoopState start;
  const StopRules rules;
  const bool resumed;
  RunCheckpoints& checkpoints;
  TrainObservers& observers;
  RunSummary run;
  int64_t step = start.global_step;
  StopState stop_state = start.stop;
  double elapsed = start.elapsed_s;

  // Where the loop stands after `steps` steps of `epoch`, its epoch's clock at `epoch_s`.
  LoopState at(int epoch, int64_t steps, double epoch_s) const {
    return LoopState{epoch, steps, step, elapsed + epoch_s, stop_state, run.time_to_target};
  }
};

// An epoch under way: its optimizer steps, its row, and this rank's progress through it.
struct EpochRun {
  // One entry per optimizer step: --accumulate-steps micro-batches of the per-rank batch.
  std::vector<std::vector<int64_t>> batches;
  EpochSummary s;
  size_t first_batch = 0;  // the first step run here: after the checkpoint's, in the resumed epoch
  TrainClock::time_point clock;
  uint64_t position = 0;  // this rank's samples so far in the epoch (keys the augmentation)
  int64_t my_samples = 0;
};

// The epoch's steps and row; the resumed epoch starts where the checkpoint stopped, and its row says
// how many steps came before.
EpochRun plan_epoch(const Loop& loop, int epoch) {
  EpochRun e;
  e.batches = step_batches(loop.sampler.indices(epoch), loop.per_rank_batch, loop.config.accumulate_steps, loop.config.drop_last);
  e.s.epoch = epoch;
  e.s.steps = static_cast<int64_t>(e.batches.size());
  if (epoch == loop.start.epoch) e.first_batch = static_cast<size_t>(std::min<int64_t>(loop.start.step_in_epoch, e.s.steps));
  e.s.steps_resumed = static_cast<int64_t>(e.first_batch);
  e.s.learning_rate = loop.schedule.lr(epoch, e.s.steps - 1, e.s.steps);  // the epoch's last step, run here or not
  for (size_t b = 0; b < e.first_batch; ++b) e.position += static_cast<uint64_t>(e.batches[b].size());
  return e;
}

// Every rank starts the epoch together, so that the spread across ranks is the ranks' own.
void start_epoch(Loop& loop, EpochRun& e) {
  loop.comm.barrier();
  loop.observers.on_epoch_start(EpochStart{e.s.epoch, e.s.steps, e.s.steps_resumed, loop.step});
  e.clock = TrainClock::now();
  loop.observers.on_resume_point({loop.at(e.s.epoch, e.s.steps_resumed, 0), e.clock});
}

// Step b of the epoch; the steps done after it (an abandoned step changed nothing: the resume point
// stays the one before it).
int64_t run_step(Loop& loop, EpochRun& e, size_t b) {
  const int epoch = e.s.epoch;
  e.s.learning_rate = loop.schedule.lr(epoch, static_cast<int64_t>(b), e.s.steps);
  const StepInfo info{epoch, loop.step, e.position, e.s.learning_rate};
  set_collective_position(epoch, static_cast<int64_t>(b));
  inject_fault_if_asked("step", static_cast<long>(loop.step - loop.start.global_step));
  loop.observers.on_step_start(info);
  const PhaseTimes times = loop.engine.train_step(e.batches[b], info);
  loop.observers.on_step_end(times);
  if (times.abandoned) return static_cast<int64_t>(b);
  if (times.valid) loop.observers.on_step_times(times);
  e.position += static_cast<uint64_t>(e.batches[b].size());
  ++loop.step;
  const int64_t steps_done = static_cast<int64_t>(b + 1);
  loop.observers.on_resume_point({loop.at(epoch, steps_done, seconds_since(e.clock)), e.clock});
  return steps_done;
}

// Ends the run after `steps_done` steps of the epoch: a stop signal reached a rank. Checkpoints it.
void stop_on_signal(Loop& loop, const EpochRun& e, int signal, int64_t steps_done, bool abandoned) {
  loop.engine.synchronize();
  RunSummary& run = loop.run;
  run.interrupted = true;
  run.stop_reason = "stopped by signal " + std::to_string(signal) + " after step " + std::to_string(steps_done) + " of epoch " +
                    std::to_string(e.s.epoch + 1) + (abandoned ? " (the step under way was abandoned)" : "");
  loop.observers.on_run_end(RunEnd{run, loop.at(e.s.epoch, steps_done, seconds_since(e.clock))});
  if (loop.config.resumable) {
    const std::string& path = loop.checkpoints.path();
    run.stop_reason += "; checkpoint " + path + " (continue with --resume " + path + ")";
  }
}

// The epoch's steps from its first to run; false when a stop signal ended the run.
bool train_steps(Loop& loop, EpochRun& e) {
  for (size_t b = e.first_batch; b < e.batches.size(); ++b) {
    const int64_t steps_done = run_step(loop, e, b);
    // Every rank learns of a signal that reached any of them, and all stop after the same step.
    if (const int signal = loop.comm.allreduce_max(stop_signal_received()); signal != 0) {
      stop_on_signal(loop, e, signal, steps_done, steps_done == static_cast<int64_t>(b));
      return false;
    }
    e.my_samples += static_cast<int64_t>(e.batches[b].size());
    loop.observers.on_step_progress(
        {e.s.epoch, steps_done, e.s.steps, steps_done - e.s.steps_resumed, e.my_samples, e.s.learning_rate, e.clock});
  }
  return true;
}

// The trained epoch's evaluation, times and row, written and recorded in the run.
void close_epoch(Loop& loop, EpochRun& e) {
  EpochSummary& s = e.s;
  loop.engine.synchronize();
  if (const PhaseTimes last = loop.engine.measurements().drain_step_times(); last.valid) loop.observers.on_step_times(last);
  const double my_wall = seconds_since(e.clock);
  loop.observers.on_epoch_trained(EpochTrained{s.epoch, my_wall});
  evaluate_epoch(s, loop.comm, loop.engine, loop.observers, loop.test_indices);
  time_epoch(s, loop.comm, my_wall, e.my_samples);
  loop.observers.measure_epoch(s);
  if (s.steps > s.steps_resumed) loop.elapsed += s.wall_max;  // the checkpoint's elapsed_s holds the steps before the resume
  loop.elapsed += s.eval_seconds;
  s.elapsed_seconds = loop.elapsed;
  {
    const auto hdf5 = loop.checkpoints.exclusive();
    loop.observers.on_epoch_end(s);
  }
  record_epoch(loop.run, loop.stop_state, s, loop.rules, loop.comm, loop.resumed);
}

// Why the run stops after the epoch: a diverged loss or an early-stopping rule; "" to go on. Saves the
// periodic checkpoint of a run that goes on.
std::string reason_to_stop_after(Loop& loop, const EpochSummary& s) {
  RunSummary& run = loop.run;
  if (!std::isfinite(s.train_loss)) {
    run.diverged = true;
    return divergence_reason(loop.config, s.train_loss, s.epoch);
  }
  const int every = loop.config.checkpoint_every;
  if (every > 0 && (s.epoch + 1) % every == 0) loop.checkpoints.save(loop.at(s.epoch + 1, 0, 0));
  if (const StopRule rule = rule_met(loop.stop_state, loop.rules); rule != StopRule::None) return stop_reason(rule, loop.rules);
  return "";
}

// One epoch, from its plan to its row; false when the run stops after it (or during it, on a signal).
bool train_epoch(Loop& loop, int epoch) {
  EpochRun e = plan_epoch(loop, epoch);
  start_epoch(loop, e);
  if (!train_steps(loop, e)) return false;
  close_epoch(loop, e);
  loop.run.stop_reason = reason_to_stop_after(loop, e.s);
  loop.observers.on_epoch_closed(epoch);
  return loop.run.stop_reason.empty();
}
}  // namespace

RunSummary train(const TrainRun& job) {
  const TrainConfig& config = job.config;
  Communicator& comm = job.comm;
  Engine& engine = job.engine;
  const int world = comm.size(), rank = comm.rank();
  const int64_t per_rank_batch = config.per_rank_batch(world);
  const EngineFacts facts = engine.describe();
  const int64_t test_n = config.test_limit > 0 ? std::min(config.test_limit, facts.test_size) : facts.test_size;
  check_every_rank_has_samples(comm, facts.train_size);
  DistributedSampler sampler(facts.train_size, world, rank, true, config.seed, config.drop_last, facts.train_shard_sizes);
  check_batch_fits(comm, sampler, per_rank_batch, config.drop_last);
  const auto schedule = schedule_for(config, world);
  log0("%s", training_line(config, per_rank_batch, world).c_str());
  const std::vector<int64_t> test_indices = test_shard(test_n, rank, world);
  const LoopState start = resume_from(job.resume, comm, engine);
  RunReporting reporting(config, comm, engine, job.results, job.mllog);
  // Before the clock and before the stop checkpointer, which must never see the warm-up's parameters.
  if (config.untimed_init_on() && start.epoch < config.epochs)
    warm_up_on_first_epoch(config, engine, sampler, per_rank_batch, start, *schedule, test_indices);
  RunCheckpoints checkpoints(config, comm, engine, job.data);
  TrainObservers observers{&checkpoints, &reporting};
  Loop loop{config, comm, engine, sampler, *schedule, test_indices, per_rank_batch, start, stop_rules(config),
            job.resume != nullptr, checkpoints, observers, {}};
  loop.run.best_accuracy = start.stop.best_accuracy;
  loop.run.time_to_target = start.target_reached_s;
  observers.on_run_start(RunStart{config, per_rank_batch * world, facts.train_size, test_n, TrainClock::now()});
  for (int epoch = start.epoch; epoch < config.epochs; ++epoch) {
    if (!train_epoch(loop, epoch)) break;
  }
  if (loop.run.interrupted) return loop.run;  // the signal's stop has ended the run
  if (loop.run.stop_reason.empty()) loop.run.stop_reason = "completed";
  observers.on_run_end(RunEnd{loop.run, loop.at(loop.run.epochs_run, 0, 0)});
  return loop.run;
}

}  // namespace sb
