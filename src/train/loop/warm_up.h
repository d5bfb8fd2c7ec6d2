// The warm-up before the training clock, MLPerf's untimed initialisation: the engine evaluates the
// evaluation's batch shapes and runs the steps it needs before its steps are steady (cuDNN plans built
// and autotuned, buffers grown, the CUDA graph captured), then gets back the run state it had before.
// The training is the same with or without it: dropout and augmentation are keyed by the step and the
// sample position, not by a counter, and the sampler's order is a function of the epoch alone.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "train/engines/engine.h"

namespace sb {

// The evaluation batches a warm-up evaluates: the first batch of `test_indices` and, when the shard does
// not divide into batches of `eval_batch`, its last, shorter one, so that every shape evaluation meets has
// its plans. Empty for an empty shard.
std::vector<int64_t> warm_up_evaluation_indices(std::span<const int64_t> test_indices, int64_t eval_batch);

// The training steps of a warm-up, from the epoch's steps: when it is shorter (no --drop-last), the epoch's
// last step, which runs eagerly with shapes of its own, then `steps` copies of the first (the engine's
// EngineFacts::warm_up_steps; the last of which the CUDA engine captures).
std::vector<std::span<const int64_t>> warm_up_steps(const std::vector<std::vector<int64_t>>& epoch_steps, int steps);

// Collective over the engine's ranks (the steps all-reduce): runs the warm-up and restores the run state
// saved before it, timed as the start-up part warm_up. `info` places every warm-up step (its dropout
// and augmentation keys), normally the epoch's first step.
void warm_up(Engine& engine, const std::vector<std::vector<int64_t>>& epoch_steps, const StepInfo& info,
             std::span<const int64_t> test_indices, int64_t eval_batch);

}  // namespace sb
