// What changes from one training step to the next, kept in device memory and refreshed by one small
// copy before each step, so that a captured CUDA graph replays with the current values.
#pragma once
#include <cstdint>

namespace sb::cuda {
struct StepInputs {
  double lr = 0;
  uint64_t step = 0;            // global step: keys dropout
  int64_t epoch = 0;            // keys the augmentation
  uint64_t first_position = 0;  // the batch's first sample position in this rank's epoch
};
}  // namespace sb::cuda
