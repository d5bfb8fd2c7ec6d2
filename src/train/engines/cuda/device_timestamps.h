// Points in time of the GPU's work on its global nanosecond clock (kernels/timestamp.h): each slot is written
// by a one-thread kernel when its stream reaches it, into pinned host memory that the host reads once that
// work is known to be done. The step's phase boundaries and the buckets' all-reduce spans use these instead
// of timing events: inside a CUDA graph a timing event's record node left the GPU idle for several
// microseconds at each boundary, and a kernel node follows the node before it within half a microsecond
// (docs/performance.md).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "nn/cuda/cuda_handles.h"

namespace sb::cuda {

class DeviceTimestamps {
 public:
  DeviceTimestamps() = default;
  explicit DeviceTimestamps(size_t count);  // `count` slots, all 0

  // Queues the write of slot i on `stream`, after everything queued there before (a kernel node inside a
  // stream capture).
  void record(size_t i, cudaStream_t stream) const;
  // Slot i in nanoseconds of the GPU's clock; call once the work that records it is done.
  uint64_t ns(size_t i) const;
  // Seconds from slot `from` to slot `to` (negative when `to` came first).
  double seconds(size_t from, size_t to) const;
  size_t size() const { return slots_.size(); }

 private:
  PinnedArray<uint64_t> slots_;
};

}  // namespace sb::cuda
