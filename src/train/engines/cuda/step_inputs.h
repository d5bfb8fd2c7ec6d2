// What changes from one training step to the next, kept in device memory and refreshed by one small
// copy before each step, so that a captured CUDA graph replays with the current values; and the slots
// that let the host queue one step while the device still runs the one before.
#pragma once
#include <cstdint>

namespace sb::cuda {
struct StepInputs {
  double lr = 0;
  uint64_t step = 0;            // global step: keys dropout
  int64_t epoch = 0;            // keys the augmentation
  uint64_t first_position = 0;  // the batch's first sample position in this rank's epoch
};

// Steps in flight: the host fills slot k % kStepSlots (its pinned inputs, phase events and graph) while the
// device may still run step k-1 in the other slot. Two suffice because the host reads step k-1's events,
// and so waits for it, before it queues step k+1.
inline constexpr int kStepSlots = 2;
inline int step_slot(int64_t steps_queued) { return static_cast<int>(steps_queued % kStepSlots); }
}  // namespace sb::cuda
