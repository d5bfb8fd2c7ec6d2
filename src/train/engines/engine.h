// The backend of a training run: it owns the model, its flat buffers, the optimizer and the data, and
// runs one data-parallel step at a time. The trainer owns the loop, the sampler, timing and results.
// CpuEngine is the reference; the CUDA engine lives in src/train/engines/cuda/. What an engine measures
// sits behind EngineMeasurements (train/engines/engine_measurements.h), its run state behind EngineRunState
// (train/engines/engine_run_state.h).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "train/engines/engine_measurements.h"
#include "train/engines/engine_run_state.h"
#include "train/engines/phase_times.h"

namespace sb {

// Where a step sits in the run: the epoch, the global step (keys dropout), the position of the batch's
// first sample in this rank's epoch (keys the augmentation) and the learning rate.
struct StepInfo {
  int epoch = 0;
  int64_t step = 0;
  uint64_t position = 0;
  double lr = 0;
};

// What an engine is and trains on, fixed for its life.
struct EngineFacts {
  std::string device_name;
  int64_t parameter_count = 0;
  int64_t train_size = 0, test_size = 0;
  // Tar shards: the training samples of each shard, which the sampler hands out whole (data/sampler.h);
  // empty for other data.
  std::vector<int64_t> train_shard_sizes;
  // How many full training steps a warm-up (train/loop/warm_up.h) runs so that the next one is steady: its
  // plans built, its buffers grown and, where the engine captures its step, the graph captured.
  int warm_up_steps = 1;
};

// How train_totals reads the epoch's training totals.
enum class TotalsRead {
  Take,  // hands them over and starts new ones
  Peek,  // leaves them as they are (for progress lines; waits for queued device work)
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual EngineFacts describe() const = 0;

  // One step on this rank's samples of the global batch (training-set indices): forward, loss, backward,
  // gradient average across ranks, optimizer update. Returns phase times (possibly of an earlier step,
  // see PhaseTimes::valid); exposed communication goes in comm, backward that ran beside an all-reduce
  // in backward_overlap (zero for an engine whose all-reduce blocks after backward).
  virtual PhaseTimes train_step(std::span<const int64_t> indices, const StepInfo& info) = 0;
  // The sum of the per-sample training losses since the last Take, and how many samples they cover. A
  // Peek finds none (count 0) where an engine does not offer them.
  virtual EvalTotals train_totals(TotalsRead read) = 0;
  // Evaluates this rank's shard of the test set (test-set indices), in eval mode. Local totals only.
  virtual EvalTotals evaluate(std::span<const int64_t> indices) = 0;
  // Finishes queued device work (so that host timers are honest). A no-op on the CPU.
  virtual void synchronize() {}
  // The run state: parameters, buffers, optimizer state, loss scale, the epoch's totals.
  virtual EngineRunState& run_state() = 0;
  // What the engine measures besides the training (step times, memory, energy, clocks), for the run's
  // observers (train/run/train_observer.h): nothing by default.
  virtual EngineMeasurements& measurements() {
    static EngineMeasurements none;
    return none;
  }
};

}  // namespace sb
