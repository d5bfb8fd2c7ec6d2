// Phase times of the CUDA training step from timestamps on the compute stream and the gradient buckets'
// timestamps on their streams (train/engines/cuda/device_timestamps.h; metrics/step_timeline.h splits them into
// phases). The host reads step k-1's timestamps after queueing step k, waiting for that step's completion
// event, so that timing never waits for the step just queued: a step's times come back one call later
// (PhaseTimes::valid), the last one through drain().
//
// kCommDone follows the compute stream's wait for everything on the communication stream, so the comm
// phase runs from the end of backward to the end of the last all-reduce; with the optimizer overlap, whose
// updates follow the all-reduces on that stream, read() ends it at the last all-reduce instead (record()
// then takes no kCommDone stamp), and the updates' tail after it counts as the optimizer phase.
//
// Each step's arrival at its last collective (PhaseTimes::arrival_s, for the straggler's rule) comes from
// the same timestamps, on the rank's own device clock: from the step's start (the timeline's: with several
// micro-batches, the last one's) to when its last bucket's gradients were ready (the end of backward where
// nothing is exchanged; metrics/step_timeline.h, arrival_seconds). Reading it takes no wait and no
// timestamp of its own.
//
// The trace places steps on the host's clock through an anchor: a timestamp taken on an idle stream
// beside a host clock reading, renewed at each synchronize (once per epoch).
#pragma once
#include <array>

#include "nn/cuda/cuda_handles.h"
#include "train/engines/cuda/device_timestamps.h"
#include "train/engines/cuda/gpu_wait.h"
#include "train/engines/cuda/step_inputs.h"
#include "train/engines/engine.h"
#include "train/engines/gradient_sync.h"

namespace sb::cuda {

// The phase boundaries of one step, in the order the step records them.
enum StepEvent { kStepStart = 0, kDataDone, kForwardDone, kBackwardDone, kCommDone, kOptimizerDone, kStepEvents };

class StepTimer {
 public:
  // Creates the timestamps and events of every slot; reads the buckets' times from `sync`, which must
  // outlive it.
  explicit StepTimer(const GradientSync& sync);

  // Records `event` of the step in `slot` (a kernel node inside a stream capture); kOptimizerDone, the
  // step's last, also records the slot's completion event, which the host waits for before reading.
  void record(int slot, StepEvent event, cudaStream_t stream, bool capturing) const;
  // Call after queueing the step in `slot`: the times of the step queued before it (waiting for it), or
  // times with valid = false for the first step.
  PhaseTimes queued(int slot, const GpuWait& wait);
  // The times of the last queued step not yet reported (valid = false when there is none).
  PhaseTimes drain(const GpuWait& wait);

  // Ties the GPU's clock to the host's steady clock; `stream` must have nothing queued (after a synchronize).
  void anchor(cudaStream_t stream);
  bool anchored() const { return anchored_; }

 private:
  PhaseTimes read(int slot, const GpuWait& wait) const;

  static size_t index(int slot, StepEvent event) { return static_cast<size_t>(slot) * kStepEvents + event; }

  const GradientSync& sync_;
  // The optimizer overlap: the buckets' updates follow their all-reduces on the communication stream.
  const bool updates_follow_allreduces_;
  DeviceTimestamps stamps_;  // kStepEvents per slot, then the anchor's
  std::array<CudaEvent, kStepSlots> done_;
  bool pending_ = false;
  int pending_slot_ = 0;
  double anchor_host_s_ = 0;  // steady clock, seconds since its epoch, when the anchor's timestamp was taken
  bool anchored_ = false;
};

}  // namespace sb::cuda
