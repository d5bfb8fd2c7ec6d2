// Gradient accumulation (--accumulate-steps K): an optimizer step takes up to K micro-batches of
// --batch-size, adds their gradients and all-reduces and updates once. These are the rules both engines
// and the trainer share: which samples make a step, how a step splits into micro-batches, the weight of
// each micro-batch's loss, and the step number that keys a micro-batch's dropout masks.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace sb {

// A rank's epoch (its sampler indices) as optimizer steps: consecutive micro-batches of micro_batch
// samples (the last one shorter unless drop_last drops it), K to a step. An epoch stays one pass over
// the data: a tail of fewer than K micro-batches is one last, smaller step (it is not dropped), so each
// step equals one step of the same samples as a single batch. Throws UserError for micro_batch < 1;
// std::invalid_argument for accumulate_steps < 1.
std::vector<std::vector<int64_t>> step_batches(const std::vector<int64_t>& indices, int64_t micro_batch,
                                               int accumulate_steps, bool drop_last);

// A step's indices cut into its micro-batches of micro_batch samples (the last may be shorter); with
// accumulate_steps 1 the step is one batch, whatever its size.
std::vector<std::span<const int64_t>> micro_batches(std::span<const int64_t> step, int64_t micro_batch, int accumulate_steps);

// The factor on a micro-batch's mean loss that makes the micro-batches' gradients add up to the step's
// mean: its share of the step's samples (1/K for K full micro-batches).
inline float micro_batch_weight(size_t micro_samples, size_t step_samples) {
  return static_cast<float>(static_cast<double>(micro_samples) / static_cast<double>(step_samples));
}

// The number that keys micro-batch m's dropout masks in optimizer step `step`: distinct for every
// micro-batch of the run, and the step itself when K is 1.
inline uint64_t dropout_step(int64_t step, int accumulate_steps, size_t micro) {
  return static_cast<uint64_t>(step) * static_cast<uint64_t>(accumulate_steps) + static_cast<uint64_t>(micro);
}

}  // namespace sb
