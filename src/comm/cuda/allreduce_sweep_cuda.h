// The GPU backend of `scalebench comm`: NCCL collectives on device buffers of this rank's GPU, timed
// with CUDA events on one stream, as nccl-tests does. Shares the points, the check pattern and the
// summary with the CPU runner (comm/allreduce_sweep.h). No CUDA types here, so the CLI can include it.
#pragma once
#include <memory>
#include <string>

#include "comm/allreduce_sweep.h"
#include "comm/communicator.h"

namespace sb::cuda {

class CudaAllreduceSweep {
 public:
  // Collective over host_comm: selects GPU local_rank % (visible GPUs) with cudaSetDevice, then creates
  // the NCCL communicator (ranks as in host_comm), one stream and two events. With symmetric_memory the
  // buffers of the sizes up to kLargestSymmetricAllreduceBytes are NCCL symmetric windows where NCCL can
  // register them (comm/cuda/nccl_window.h), as the training's gradient buckets are, so that the sweep
  // times the kernels training runs.
  CudaAllreduceSweep(Communicator& host_comm, int local_rank, bool symmetric_memory);
  ~CudaAllreduceSweep();
  CudaAllreduceSweep(const CudaAllreduceSweep&) = delete;
  CudaAllreduceSweep& operator=(const CudaAllreduceSweep&) = delete;

  int device() const;  // the CUDA device this rank uses
  // Why the buffers are plain device memory although symmetric_memory was asked for ("" when they are
  // windows, or when it was not asked for): the same on every rank.
  const std::string& symmetric_refusal() const;
  // Whether the sizes up to kLargestSymmetricAllreduceBytes run in symmetric windows (asked for, not refused).
  bool uses_symmetric_windows() const;

  // Throws UserError (naming --max-bytes) when two buffers of `bytes` (send and receive) would not fit
  // the device's free memory. Not collective: run it under run_collectively.
  void check_fits(int64_t bytes) const;

  // Collective. Out of place, then in place: fills the input with the check pattern (and the result with
  // CheckPattern::kUnwritten), checks one call of the point's collective (comm/cuda/nccl_collective_calls.h),
  // runs the warm-up ones, then times settings.iterations of them enqueued back to back between two
  // events. Any dtype: fp32, fp64, bf16, fp16.
  SweepResult run(const SweepPoint& point, const SweepSettings& settings);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sb::cuda
