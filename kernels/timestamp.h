// A point in time on the GPU's global nanosecond clock (%globaltimer), written by one thread when the stream
// reaches it. Inside a CUDA graph this is a kernel node, which follows the node before it within a fraction
// of a microsecond; a timing event's record node there left the GPU idle for several microseconds at each
// phase boundary of the training step (docs/performance.md), which a step of 0.2 ms cannot afford.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::kernels {

// *out = the global timer in nanoseconds, once every earlier operation of `stream` is done. `out` may be
// device memory or mapped pinned host memory (a device-visible pointer).
void record_timestamp(uint64_t* out, cudaStream_t stream);

}  // namespace sb::kernels
