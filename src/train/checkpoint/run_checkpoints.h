// The checkpoints a training run writes: every --checkpoint-every epochs, and when a stop signal ends the
// run (unless the run is not resumable), then the stop checkpointer's (train/checkpoint/stop_checkpoint.h),
// which follows the loop's step boundaries to write the last finished step from a thread of its own.
#pragma once
#include <mutex>
#include <string>

#include "comm/communicator.h"
#include "train/checkpoint/checkpoint.h"
#include "train/checkpoint/stop_checkpoint.h"
#include "train/engines/engine.h"
#include "train/run/train_observer.h"

namespace sb {

class RunCheckpoints final : public TrainObserver {
 public:
  // After the warm-up: the stop checkpointer must never see the warm-up's parameters.
  RunCheckpoints(const TrainConfig& config, Communicator& comm, Engine& engine, const DataIdentity& data);

  const std::string& path() const { return path_; }
  // Collective: the checkpoint of `at`, written by rank 0.
  void save(const LoopState& at);
  // Held by rank 0's main thread around its other HDF5 writes (the results file): HDF5 is not thread-safe.
  std::unique_lock<std::mutex> exclusive() { return stopper_.exclusive(); }

  void on_resume_point(const ResumePoint& e) override { stopper_.at_step_boundary(e.at); }
  // Until the next epoch's first boundary: the epoch's row is yet to be written.
  void on_epoch_trained(const EpochTrained&) override { stopper_.suspend(); }
  // A run that a stop signal ended: the checkpoint of where it stopped, unless the stop checkpointer's
  // thread wrote that very point.
  void on_run_end(const RunEnd& e) override;

 private:
  Communicator& comm_;
  Engine& engine_;
  const std::string config_json_;
  const DataIdentity data_;
  const std::string path_;
  const bool resumable_;
  StopCheckpointer stopper_;
};

}  // namespace sb
