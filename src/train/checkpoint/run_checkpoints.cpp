#include "train/checkpoint/run_checkpoints.h"

namespace sb {

RunCheckpoints::RunCheckpoints(const TrainConfig& config, Communicator& comm, Engine& engine, const DataIdentity& data)
    : comm_(comm),
      engine_(engine),
      config_json_(config.to_json()),
      data_(data),
      path_(config.checkpoint_path()),
      resumable_(config.resumable),
      stopper_(comm, engine, config_json_, data_, path_, config.resumable) {}

void RunCheckpoints::save(const LoopState& at) {
  const auto hdf5 = stopper_.exclusive();
  save_checkpoint(comm_, engine_, config_json_, data_, at, path_);
}

void RunCheckpoints::on_run_end(const RunEnd& e) {
  if (!e.run.interrupted || !resumable_) return;
  if (!stopper_.finish(e.at)) save(e.at);
}

}  // namespace sb
