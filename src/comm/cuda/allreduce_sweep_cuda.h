// The GPU backend of `scalebench comm`: NCCL all-reduces on device buffers of this rank's GPU, timed
// with CUDA events on one stream, as nccl-tests does. Shares the points, the check pattern and the
// summary with the CPU runner (comm/allreduce_sweep.h). No CUDA types here, so the CLI can include it.
#pragma once
#include <memory>

#include "comm/allreduce_sweep.h"
#include "comm/communicator.h"

namespace sb::cuda {

class CudaAllreduceSweep {
 public:
  // Collective over host_comm: selects GPU local_rank % (visible GPUs) with cudaSetDevice, then creates
  // the NCCL communicator (ranks as in host_comm), one stream and two events.
  CudaAllreduceSweep(Communicator& host_comm, int local_rank);
  ~CudaAllreduceSweep();
  CudaAllreduceSweep(const CudaAllreduceSweep&) = delete;
  CudaAllreduceSweep& operator=(const CudaAllreduceSweep&) = delete;

  int device() const;  // the CUDA device this rank uses

  // Throws UserError (naming --max-bytes) when two buffers of `bytes` (send and receive) would not fit
  // the device's free memory. Not collective: run it under run_collectively.
  void check_fits(int64_t bytes) const;

  // Collective. Out of place, then in place: fills the send buffer with the check pattern, checks one
  // ncclAllReduce(sum), runs the warm-up ones, then times settings.iterations of them enqueued back to
  // back between two events. Any dtype: fp32, fp64, bf16, fp16.
  SweepResult run(const SweepPoint& point, const SweepSettings& settings);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sb::cuda
