// How many batch buffers a training rank's input holds per GPU: training's host input (data/cuda/host_input.h)
// and `scalebench io --emulate-gpus` (data/emulated_training.h) size their rings by these.
#pragma once

namespace sb {

// The host ring the workers build into: one batch being uploaded and the rest built ahead.
inline constexpr int kHostRingSlots = 4;
// The batches the steps in flight hold, one per step slot: where a step reads its batch where it was built
// (--decode gpu), these stay taken in the ring as well.
inline constexpr int kInputSlotsPerGpu = 2;

}  // namespace sb
