// The host's waits for the GPU under the collective watchdog: behind a training step's work is an NCCL
// all-reduce, and a rank that never joins it would leave this one blocked in CUDA forever. With the
// watchdog on (--collective-timeout > 0) the wait polls and takes the watchdog's roll call; off, it
// blocks in CUDA.
#pragma once
#include "comm/communicator.h"
#include "nn/cuda/cuda_handles.h"

namespace sb::cuda {

class GpuWait {
 public:
  // members: the ranks whose all-reduce the GPU work may wait on (the roll call's communicator).
  explicit GpuWait(const Communicator& members) : members_(members) {}
  // Until everything queued on `stream` has finished.
  void for_stream(const CudaStream& stream) const;
  // Until the work before `event`'s last record has finished.
  void for_event(const CudaEvent& event) const;

 private:
  const Communicator& members_;
};

}  // namespace sb::cuda
