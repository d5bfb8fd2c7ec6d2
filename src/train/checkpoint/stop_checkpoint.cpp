#include "train/checkpoint/stop_checkpoint.h"

#include <chrono>

#include "core/log.h"
#include "core/stop_signal.h"

namespace sb {

StopCheckpointer::StopCheckpointer(Communicator& comm, Engine& engine, const std::string& config_json, const DataIdentity& data,
                                   const std::string& path, bool enabled)
    : comm_(comm), engine_(engine), engine_mutex_(enabled ? engine.run_state().update_mutex() : nullptr), path_(path) {
  if (!engine_mutex_) return;
  held_.config_json = config_json;
  held_.data = data;
  held_.world_size = comm.size();
  if (comm.rank() == 0) thread_ = std::thread([this] { watch(); });
}

StopCheckpointer::~StopCheckpointer() {
  quit_ = true;
  if (thread_.joinable()) thread_.join();
}

void StopCheckpointer::at_step_boundary(const LoopState& loop) {
  if (!engine_mutex_) return;
  const EngineState running = engine_.run_state().save_running();
  Checkpoint gathered;  // gathered outside the lock: the thread may hold it while it writes
  gather_rank_state(comm_, running, gathered);
  if (comm_.rank() != 0) return;
  const std::lock_guard<std::mutex> lock(held_mutex_);
  held_.loop = loop;
  held_.engine.optimizer_steps = running.optimizer_steps;
  held_.rank_buffers = std::move(gathered.rank_buffers);
  held_.rank_totals = std::move(gathered.rank_totals);
  has_held_ = true;
}

void StopCheckpointer::watch() {
  while (!quit_) {
    if (stop_signal_received() != 0 && write_when_consistent()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void StopCheckpointer::suspend() {
  if (!engine_mutex_ || comm_.rank() != 0) return;
  const std::lock_guard<std::mutex> lock(held_mutex_);
  has_held_ = false;
}

// True once it wrote; false while there is nothing consistent to write: nothing held (between an epoch's
// last step and the next boundary), or the model ahead of the held state (between an update and the
// boundary after it). The thread then tries again shortly, and the trainer writes it if it gets there first.
bool StopCheckpointer::write_when_consistent() {
  const std::lock_guard<std::mutex> no_update(*engine_mutex_);
  const std::lock_guard<std::mutex> lock(held_mutex_);
  if (!has_held_) return false;
  EngineState model = engine_.run_state().save_model();
  if (model.optimizer_steps != held_.engine.optimizer_steps) return false;
  Checkpoint checkpoint = held_;
  checkpoint.engine.params = std::move(model.params);
  checkpoint.engine.optimizer_state = std::move(model.optimizer_state);
  write_checkpoint(checkpoint, path_);
  written_loop_ = held_.loop;
  written_ = true;
  // Said at once: the launcher may kill the job before the trainer gets to say it.
  log0("stop signal: checkpoint %s written at step %lld of epoch %d (continue with --resume %s)\n", path_.c_str(),
       static_cast<long long>(held_.loop.step_in_epoch), held_.loop.epoch + 1, path_.c_str());
  return true;
}

bool StopCheckpointer::finish(const LoopState& loop) {
  if (!engine_mutex_) return false;
  quit_ = true;
  if (thread_.joinable()) thread_.join();
  const bool same = written_ && written_loop_.epoch == loop.epoch && written_loop_.step_in_epoch == loop.step_in_epoch &&
                    written_loop_.global_step == loop.global_step;
  return comm_.allreduce_max(same ? 1 : 0) != 0;  // rank 0 knows; every rank must agree
}

std::unique_lock<std::mutex> StopCheckpointer::exclusive() {
  if (!engine_mutex_ || comm_.rank() != 0) return {};
  return std::unique_lock<std::mutex>(*engine_mutex_);
}

}  // namespace sb
