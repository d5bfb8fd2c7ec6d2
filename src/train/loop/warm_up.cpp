#include "train/loop/warm_up.h"

#include <algorithm>

#include "core/nvtx_ranges.h"
#include "core/startup_clock.h"

namespace sb {

std::vector<int64_t> warm_up_evaluation_indices(std::span<const int64_t> test_indices, int64_t eval_batch) {
  const size_t n = test_indices.size(), batch = static_cast<size_t>(std::max<int64_t>(eval_batch, 1));
  std::vector<int64_t> out(test_indices.begin(), test_indices.begin() + static_cast<std::ptrdiff_t>(std::min(n, batch)));
  // The engine cuts these into batches of eval_batch again: a full first batch, then the shard's tail.
  if (const size_t tail = n % batch; n > batch && tail != 0) out.insert(out.end(), test_indices.end() - static_cast<std::ptrdiff_t>(tail), test_indices.end());
  return out;
}

std::vector<std::span<const int64_t>> warm_up_steps(const std::vector<std::vector<int64_t>>& epoch_steps, int steps) {
  std::vector<std::span<const int64_t>> out;
  if (epoch_steps.empty()) return out;
  // The short step first: its shapes may grow buffers (a cuDNN plan's workspace), which must happen
  // before the full steps' graph is captured with their addresses.
  if (epoch_steps.back().size() != epoch_steps.front().size()) out.emplace_back(epoch_steps.back());
  for (int i = 0; i < steps; ++i) out.emplace_back(epoch_steps.front());
  return out;
}

void warm_up(Engine& engine, const std::vector<std::vector<int64_t>>& epoch_steps, const StepInfo& info,
             std::span<const int64_t> test_indices, int64_t eval_batch) {
  const StartupSpan warm_up_startup(StartupPart::warm_up);
  const NvtxRange range(kNvtxWarmUp);
  const EngineState before = engine.run_state().save();
  // Evaluation first, as its larger batches grow the layers' buffers: the graph captured below then
  // holds buffers that no later evaluation moves.
  if (const std::vector<int64_t> eval = warm_up_evaluation_indices(test_indices, eval_batch); !eval.empty()) {
    const NvtxRange evaluation_range(kNvtxEvaluation);
    engine.evaluate(eval);
  }
  for (const std::span<const int64_t> step : warm_up_steps(epoch_steps, engine.describe().warm_up_steps)) {
    const NvtxRange step_range(kNvtxStep);
    engine.train_step(step, info);
  }
  engine.synchronize();
  engine.measurements().drain_step_times();  // the warm-up's times are not the run's
  engine.run_state().load(before);
}

}  // namespace sb
