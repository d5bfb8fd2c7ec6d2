// An engine's run state (docs/architecture.md, "One run state"): the value a checkpoint holds, and the
// interface through which checkpoints and the warm-up save and restore it (Engine::run_state()).
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sb {

struct EvalTotals {
  double loss_sum = 0;  // sum over samples of the per-sample loss
  int64_t correct = 0;
  int64_t count = 0;
};

// Everything a checkpoint needs from an engine (the run state less the loop's counters).
struct EngineState {
  std::vector<float> params, buffers;
  std::vector<std::pair<std::string, std::vector<float>>> optimizer_state;  // by torch.optim's names
  int64_t optimizer_steps = 0;
  float loss_scale = 0;      // fp16 dynamic loss scale (0 where unused)
  int32_t scale_growth = 0;  // steps since the scale last changed
  EvalTotals train_totals;   // the current epoch's training loss so far
};

// The run state as the checkpoints and the warm-up reach it, handed out by Engine::run_state().
class EngineRunState {
 public:
  virtual ~EngineRunState() = default;
  // Copies of the run state (synchronous); load restores one exactly.
  virtual EngineState save() = 0;
  virtual void load(const EngineState& state) = 0;
  // For a checkpoint written by another thread while a step runs (a stop signal during a step longer than
  // the launcher's grace): the mutex the engine holds while its update changes the parameters and the
  // optimizer state, or nullptr where steps are short enough to wait for (the GPU).
  virtual std::mutex* update_mutex() { return nullptr; }
  // With update_mutex() held: the parameters, the optimizer state and its step count (not the buffers
  // or totals, which the running step changes).
  virtual EngineState save_model() { return {}; }
  // The part the running step changes, cheap enough for every step: buffers, train_totals and
  // optimizer_steps (where update_mutex() is not nullptr).
  virtual EngineState save_running() { return {}; }
};

}  // namespace sb
