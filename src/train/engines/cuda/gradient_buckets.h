// Gradient all-reduce in buckets that start while backward is still running (DDP's scheme): parameters
// are grouped from the last one backwards (the order in which backward finishes them) into buckets of
// about --bucket-mib (the last one, for the first layers, is kept small: train/engines/bucket_plan.h); when
// backward reports that every gradient from some offset on is final, each bucket lying wholly past it is
// all-reduced on a high-priority communication stream, ordered by an event after the stream on which
// backward reports them final (the compute stream, or the weight-gradient stream once it is past both;
// nn/cuda/context.h) without host synchronisation. finish() makes the compute stream wait for them all.
//
// With queue_updates (the optimizer overlap, train/engines/optimizer_overlap.h) each bucket's optimizer update
// follows its all-reduce on the communication stream, so the update of the first buckets runs while
// backward still works on the layers below; the compute stream then runs no optimizer. The buckets launch
// in descending offset order, one after another on that one stream (in a captured graph, a chain of its
// nodes), and the last one launched advances the optimizer's step counter after every other update of
// the step has read it.
//
// For the step's timeline each bucket takes timestamps (train/engines/cuda/device_timestamps.h): when it is ready
// (on the stream that reported it final), when its all-reduce is done and, with queue_updates, when its
// update is done (communication stream; not the last bucket's, which the step's own end bounds), per step
// slot, as kernel nodes inside a stream capture. StepTimer reads them one step late.
#pragma once
#include <cuda_runtime.h>

#include <array>
#include <memory>
#include <vector>

#include "comm/cuda/nccl_communicator.h"
#include "comm/cuda/nccl_window.h"
#include "metrics/step_timeline.h"
#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"
#include "nn/spec.h"
#include "train/engines/bucket_plan.h"
#include "train/engines/cuda/device_optimizer.h"
#include "train/engines/cuda/device_timestamps.h"
#include "train/engines/cuda/step_inputs.h"
#include "train/engines/optimizer_overlap.h"

namespace sb::cuda {

class GradientBuckets {
 public:
  // grads: the flat fp32 gradient buffer (n elements). With reduce_in_bf16 each bucket is cast to bf16,
  // averaged in bf16 and cast back (half the bytes on the wire). With symmetric_window (collective over
  // nccl's ranks; comm/cuda/nccl_window.h) each bucket of at most kLargestSymmetricAllreduceBytes is scaled
  // by 1/ranks into its slot of one NCCL symmetric window (symmetric_window_layout) in the wire's dtype,
  // summed there and copied (or cast) back, which lets NCCL run its symmetric kernels; the others, and all
  // without the window, are averaged in place (or in a bf16 buffer). One rank has nothing to average: the
  // engine then makes no buckets at all. With queued updates (queue_updates) a bucket in the window on an
  // fp32 wire is updated from its slot and not copied back: the gradient buffer then keeps this rank's own
  // gradients of that bucket after the step.
  GradientBuckets(std::vector<Bucket> buckets, float* grads, int64_t n, NcclCommunicator& nccl,
                  cudaStream_t compute, bool reduce_in_bf16, bool symmetric_window);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // From now on, each bucket's optimizer update is queued right after its all-reduce (and the cast back
  // with reduce_in_bf16). The buckets must cover every parameter (a fatal error otherwise).
  void queue_updates(const DeviceOptimizer& optimizer);
  bool queues_updates() const { return optimizer_ != nullptr; }

  // Starts a new step (no bucket launched yet) whose timestamps go to `slot`.
  void begin_step(int slot);
  // Called from backward: gradients [first_final, n) are final in the order of `final_on`. Launches every
  // bucket now complete, after that point of `final_on`.
  void gradients_ready_from(int64_t first_final, cudaStream_t final_on);
  // Launches whatever is left (after the compute stream's work so far, which must include every gradient's
  // write) and makes the compute stream wait for every bucket.
  void finish();

  // After the step in `slot` is complete: each bucket's times relative to `step_start_ns` (that step's
  // start on the GPU's clock: DeviceTimestamps::ns), in launch order; a span ends with its all-reduce.
  std::vector<BucketSpan> read_times(int slot, uint64_t step_start_ns) const;

 private:
  void launch(size_t b, cudaStream_t ready_on);

  std::vector<Bucket> buckets_;
  float* grads_;
  int64_t n_;
  NcclCommunicator& nccl_;
  cudaStream_t compute_;
  CudaStream comm_;
  bool bf16_;
  const DeviceOptimizer* optimizer_ = nullptr;  // set by queue_updates
  DeviceBuffer bf16_buffer_;            // the bf16 wire of the buckets outside the window, packed
  std::vector<size_t> bf16_offsets_;    // by bucket, in elements of bf16_buffer_ (with reduce_in_bf16)
  std::unique_ptr<NcclWindow> window_;  // the wire of the buckets in it, packed (null when none is)
  std::vector<size_t> window_offsets_;  // by bucket (SymmetricWindowLayout::offsets)
  std::vector<CudaEvent> ready_;
  CudaEvent done_;
  size_t next_ = 0;  // buckets_[0..next_) are launched this step
  // Timestamps by step slot and bucket: ready on the stream that reported it, then its all-reduce's end and
  // its update's end on the communication stream (stamp_index).
  enum Stamp { kReady = 0, kReduced, kUpdated, kStamps };
  size_t stamp_index(int slot, size_t bucket, Stamp stamp) const {
    return (static_cast<size_t>(slot) * buckets_.size() + bucket) * kStamps + stamp;
  }
  // Whether bucket b's update takes a timestamp (where the next bucket may start): not the last bucket's,
  // whose update ends with the step (its optimizer phase), so that the step's tail takes no stamp for it.
  bool takes_update_stamp(size_t b) const {
    return optimizer_ && !advances_step_counter(b, buckets_.size());
  }
  double since(size_t stamp, uint64_t step_start_ns) const;
  DeviceTimestamps stamps_;
  int slot_ = 0;
};

}  // namespace sb::cuda
