#include "train/reporting/progress_observer.h"

#include <chrono>
#include <cmath>

#include "core/log.h"

namespace sb {
namespace {
double seconds_since(TrainClock::time_point t0) { return std::chrono::duration<double>(TrainClock::now() - t0).count(); }
}  // namespace

ProgressObserver::ProgressObserver(const TrainConfig& config, Engine& engine, int rank, int world)
    : engine_(engine),
      epochs_(config.epochs),
      log_interval_(config.log_interval),
      world_(world),
      rank_unit_(config.device == Device::Cuda ? "GPU" : "rank"),
      schedule_(rank == 0 ? config.log_seconds : 0) {}

void ProgressObserver::on_step_progress(const StepProgress& p) {
  if (log_interval_ > 0 && p.step % log_interval_ == 0) {
    log0("  epoch %d step %lld/%lld lr %.4g\n", p.epoch + 1, static_cast<long long>(p.step), static_cast<long long>(p.steps),
         p.lr);
  }
  if (!schedule_.due(seconds_since(p.epoch_start))) return;
  const EvalTotals so_far = engine_.train_totals(TotalsRead::Peek);
  ProgressPoint point;
  point.epoch = p.epoch;
  point.epochs = epochs_;
  point.step = p.step;
  point.steps = p.steps;
  point.steps_timed = p.steps_run;
  point.epoch_seconds = seconds_since(p.epoch_start);
  point.images = p.samples * world_;  // the sampler gives every rank as many samples
  point.ranks = world_;
  point.rank_unit = rank_unit_;
  point.loss = so_far.count ? so_far.loss_sum / static_cast<double>(so_far.count) : NAN;
  point.eval_seconds = last_eval_seconds_;
  log0("%s\n", progress_line(point, std::chrono::system_clock::now()).c_str());
}

void ProgressObserver::on_epoch_end(const EpochSummary& s) {
  log0("epoch %3d/%d  time %8.3f s  train loss %.4f  test loss %.4f  test acc %6.2f%%  %s img/s  lr %.4g\n", s.epoch + 1,
       epochs_, s.wall_max, s.train_loss, s.test_loss, 100.0 * s.test_accuracy, with_thousands(s.images_per_s).c_str(),
       s.learning_rate);
  last_eval_seconds_ = s.eval_seconds;
}

}  // namespace sb
