// The input gradients of one backward, in buffers that the layers share: a gradient lives from the layer
// that writes it to the layer below that reads it, so a network needs a few buffers of the largest sizes
// instead of one per layer (tests/gpu/test_gradient_pool: a ResNet-18's backward on at most 6).
//
// A layer's backward takes its input gradient from acquire(); the container that hands it to the layer
// below gives it back with release() once that layer's backward is queued. What reads a gradient on the
// compute stream is ordered before any later writer by the stream itself; what reads it on the
// weight-gradient stream (a convolution's or a Linear's weight gradient) is not, so release() records an
// event there while weight gradients are forked, and the next acquire() of that buffer makes the compute
// stream wait for it. The choice of buffer depends only on the order of the calls, which every step of
// one shape repeats, so a captured CUDA graph sees the same addresses at every replay.
// Forward holds no gradient: there the buffers serve outputs that only the next forward reads
// (FusedBnRun::lend_output), each given back before backward begins.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"

namespace sb::cuda {

class GradientPool {
 public:
  // Every buffer free, nothing to wait for (the previous backward ended by joining its weight gradients).
  void begin_backward();
  // A free buffer of at least `bytes`: the smallest that fits, of those the earliest given back; where none
  // fits, the largest free one grown (its old block freed, which waits for the device: the first backwards
  // of a shape grow the buffers, those the engine runs eagerly, never a captured one); a new one when none
  // is free. Queues on `compute` a wait for the weight gradients that read it last.
  void* acquire(size_t bytes, cudaStream_t compute);
  // Gives back the buffer at `data` (a pointer the pool did not hand out is ignored). `wgrad`: the
  // weight-gradient stream while weight gradients are forked (its work queued so far may read the
  // buffer), else nullptr.
  void release(const void* data, cudaStream_t wgrad);
  // The weight-gradient stream was joined into the compute stream: no buffer needs a wait any more.
  void joined();

  size_t buffers() const { return slots_.size(); }
  size_t bytes() const;

 private:
  struct Slot {
    DeviceBuffer buffer;
    CudaEvent released;    // recorded on the weight-gradient stream by release()
    bool in_use = false;
    bool pending = false;  // `released` must be waited for before the next writer
    uint64_t given_back = 0;
  };
  std::vector<std::unique_ptr<Slot>> slots_;
  uint64_t clock_ = 0;
};

}  // namespace sb::cuda
