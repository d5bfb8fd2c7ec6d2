// Rank 0 stays ready to checkpoint the last finished step at any moment, and writes it from a thread of its
// own the moment a stop signal arrives. A step longer than the launcher's grace (mpirun leaves one second
// between SIGTERM and SIGKILL by default; large-batch CPU steps take longer) is then abandoned without
// losing the run. Only engines with an update mutex (EngineRunState::update_mutex: the CPU engine) need it;
// for the others, and for runs that write no checkpoint, every call does nothing.
#pragma once
#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "comm/communicator.h"
#include "train/checkpoint/checkpoint.h"
#include "train/engines/engine.h"

namespace sb {

class StopCheckpointer {
 public:
  StopCheckpointer(Communicator& comm, Engine& engine, const std::string& config_json, const DataIdentity& data,
                   const std::string& path, bool enabled);
  ~StopCheckpointer();
  StopCheckpointer(const StopCheckpointer&) = delete;
  StopCheckpointer& operator=(const StopCheckpointer&) = delete;

  // Collective, at the start and after every finished step: every rank's buffers and epoch totals go to
  // rank 0 with the loop state, as what a checkpoint of this point needs beside the model.
  void at_step_boundary(const LoopState& loop);

  // Rank 0 holds nothing to write until the next boundary (call while the epoch is evaluated and its row
  // written: a checkpoint of the epoch's end would then lag the results file).
  void suspend();

  // Collective, when the trainer stops on a signal at `loop`: waits for the thread, and is true on every
  // rank when the thread wrote the checkpoint of that same point (the trainer then writes none).
  bool finish(const LoopState& loop);

  // Held by the main thread of rank 0 around its own HDF5 writes (results, checkpoints): HDF5 is not
  // thread-safe. An empty lock where the checkpointer is off.
  std::unique_lock<std::mutex> exclusive();

 private:
  void watch();  // the thread, rank 0 only
  bool write_when_consistent();

  Communicator& comm_;
  Engine& engine_;
  std::mutex* engine_mutex_;  // nullptr: off
  std::string path_;
  std::mutex held_mutex_;     // guards held_
  Checkpoint held_;           // rank 0: all but the model, as of the last boundary
  bool has_held_ = false;
  std::atomic<bool> quit_{false};
  std::atomic<bool> written_{false};
  LoopState written_loop_;
  std::thread thread_;
};

}  // namespace sb
