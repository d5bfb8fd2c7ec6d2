// Phase times of the CUDA training step from events on the compute stream. The host reads step k-1's
// events after queueing step k, so that timing never waits for the step just queued: a step's times come
// back one call later (PhaseTimes::valid), the last one through drain().
#pragma once
#include <array>

#include "nn/cuda/cuda_handles.h"
#include "train/cuda/gpu_wait.h"
#include "train/cuda/step_inputs.h"
#include "train/engine.h"

namespace sb::cuda {

// The phase boundaries of one step, in the order the step records them.
enum StepEvent { kStepStart = 0, kDataDone, kForwardDone, kBackwardDone, kCommDone, kOptimizerDone, kStepEvents };

class StepTimer {
 public:
  StepTimer();  // creates the events of every slot

  // Records `event` of the step in `slot`; inside a stream capture as an event node of the graph.
  void record(int slot, StepEvent event, cudaStream_t stream, bool capturing) const;
  // Call after queueing the step in `slot`: the times of the step queued before it (waiting for it), or
  // times with valid = false for the first step.
  PhaseTimes queued(int slot, const GpuWait& wait);
  // The times of the last queued step not yet reported (valid = false when there is none).
  PhaseTimes drain(const GpuWait& wait);

 private:
  PhaseTimes read(int slot, const GpuWait& wait) const;

  std::array<std::array<CudaEvent, kStepEvents>, kStepSlots> events_;
  bool pending_ = false;
  int pending_slot_ = 0;
};

}  // namespace sb::cuda
