// The backend of a training run: it owns the model, its flat buffers, the optimizer and the data, and
// runs one data-parallel step at a time. The trainer owns the loop, the sampler, timing and results.
// CpuEngine is the reference; the CUDA engine lives in src/train/engines/cuda/. What an engine measures
// sits behind EngineMeasurements (train/engines/engine_measurements.h).
#pragma once
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "train/engines/engine_measurements.h"
#include "train/engines/phase_times.h"

namespace sb {

struct EvalTotals {
  double loss_sum = 0;  // sum over samples of the per-sample loss
  int64_t correct = 0;
  int64_t count = 0;
};

// Where a step sits in the run: the epoch, the global step (keys dropout), the position of the batch's
// first sample in this rank's epoch (keys the augmentation) and the learning rate.
struct StepInfo {
  int epoch = 0;
  int64_t step = 0;
  uint64_t position = 0;
  double lr = 0;
};

// Everything a checkpoint needs from an engine (the run state of docs/architecture.md, less the loop's counters).
struct EngineState {
  std::vector<float> params, buffers;
  std::vector<std::pair<std::string, std::vector<float>>> optimizer_state;  // by torch.optim's names
  int64_t optimizer_steps = 0;
  float loss_scale = 0;      // fp16 dynamic loss scale (0 where unused)
  int32_t scale_growth = 0;  // steps since the scale last changed
  EvalTotals train_totals;   // the current epoch's training loss so far
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string device_name() const = 0;
  virtual int64_t parameter_count() const = 0;
  virtual int64_t train_size() const = 0;
  virtual int64_t test_size() const = 0;
  // Tar shards: the training samples of each shard, which the sampler hands out whole (data/sampler.h).
  virtual std::vector<int64_t> train_shard_sizes() const { return {}; }

  // One step on this rank's samples of the global batch (training-set indices): forward, loss, backward,
  // gradient average across ranks, optimizer update. Returns phase times (possibly of an earlier step,
  // see PhaseTimes::valid); exposed communication goes in comm, backward that ran beside an all-reduce
  // in backward_overlap (zero for an engine whose all-reduce blocks after backward).
  virtual PhaseTimes train_step(std::span<const int64_t> indices, const StepInfo& info) = 0;
  // How many full training steps a warm-up (train/loop/warm_up.h) runs so that the next one is steady: its
  // plans built, its buffers grown and, where the engine captures its step, the graph captured.
  virtual int warm_up_steps() const { return 1; }
  // The sum of the per-sample training losses since the last call, and how many samples they cover.
  virtual EvalTotals take_train_totals() = 0;
  // The same totals, left as they are (for progress lines; waits for queued device work). None (count
  // 0) where an engine does not offer them.
  virtual EvalTotals peek_train_totals() { return {}; }
  // Evaluates this rank's shard of the test set (test-set indices), in eval mode. Local totals only.
  virtual EvalTotals evaluate(std::span<const int64_t> indices) = 0;

  // Finishes queued device work (so that host timers are honest). A no-op on the CPU.
  virtual void synchronize() {}
  // Copies of the run state (synchronous), for checkpoints; load_state restores one exactly.
  virtual EngineState save_state() = 0;
  virtual void load_state(const EngineState& state) = 0;
  // For a checkpoint written by another thread while a step runs (a stop signal during a step longer than
  // the launcher's grace): the mutex the engine holds while its update changes the parameters and the
  // optimizer state, or nullptr where steps are short enough to wait for (the GPU).
  virtual std::mutex* update_mutex() { return nullptr; }
  // With update_mutex() held: the parameters, the optimizer state and its step count (not the buffers
  // or totals, which the running step changes).
  virtual EngineState save_model_state() { return {}; }
  // The part the running step changes, cheap enough for every step: buffers, train_totals and
  // optimizer_steps (where update_mutex() is not nullptr).
  virtual EngineState save_running_state() { return {}; }
  // What the engine measures besides the training (step times, memory, energy, clocks), for the run's
  // observers (train/run/train_observer.h): nothing by default.
  virtual EngineMeasurements& measurements() {
    static EngineMeasurements none;
    return none;
  }
};

}  // namespace sb
