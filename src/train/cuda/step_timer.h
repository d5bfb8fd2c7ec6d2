// Phase times of the CUDA training step from events on the compute stream and the gradient buckets'
// events on both streams (metrics/step_timeline.h splits them into phases). The host reads step k-1's
// events after queueing step k, so that timing never waits for the step just queued: a step's times come
// back one call later (PhaseTimes::valid), the last one through drain().
//
// kCommDone follows the compute stream's wait for everything on the communication stream, so the comm
// phase runs from the end of backward to the end of the last bucket's work there: its all-reduce and, with
// the optimizer overlap, its update. The optimizer phase is what the compute stream runs after that
// (near nothing with the overlap).
//
// The trace places steps on the host's clock through an anchor: an event recorded on an idle stream
// beside a host clock reading, renewed at each synchronize (once per epoch).
#pragma once
#include <array>

#include "nn/cuda/cuda_handles.h"
#include "train/cuda/gpu_wait.h"
#include "train/cuda/gradient_buckets.h"
#include "train/cuda/step_inputs.h"
#include "train/engine.h"

namespace sb::cuda {

// The phase boundaries of one step, in the order the step records them.
enum StepEvent { kStepStart = 0, kDataDone, kForwardDone, kBackwardDone, kCommDone, kOptimizerDone, kStepEvents };

class StepTimer {
 public:
  explicit StepTimer(const GradientBuckets* buckets);  // creates the events of every slot

  // Records `event` of the step in `slot`; inside a stream capture as an event node of the graph.
  void record(int slot, StepEvent event, cudaStream_t stream, bool capturing) const;
  // Call after queueing the step in `slot`: the times of the step queued before it (waiting for it), or
  // times with valid = false for the first step.
  PhaseTimes queued(int slot, const GpuWait& wait);
  // The times of the last queued step not yet reported (valid = false when there is none).
  PhaseTimes drain(const GpuWait& wait);

  // Ties device time to the host's steady clock; `stream` must have nothing queued (after a synchronize).
  void anchor(cudaStream_t stream);
  bool anchored() const { return anchored_; }

 private:
  PhaseTimes read(int slot, const GpuWait& wait) const;

  const GradientBuckets* buckets_;
  std::array<std::array<CudaEvent, kStepEvents>, kStepSlots> events_;
  bool pending_ = false;
  int pending_slot_ = 0;
  CudaEvent anchor_;
  double anchor_host_s_ = 0;  // steady clock, seconds since its epoch, when anchor_ ran
  bool anchored_ = false;
};

}  // namespace sb::cuda
