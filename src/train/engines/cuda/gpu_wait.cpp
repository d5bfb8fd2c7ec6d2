#include "train/engines/cuda/gpu_wait.h"

#include <functional>

#include "comm/collective_watchdog.h"
#include "comm/mpi_communicator.h"
#include "core/cuda_check.h"

namespace sb::cuda {
namespace {

void poll_under_watchdog(const std::function<cudaError_t()>& query, const Communicator& members) {
  const auto* mpi = dynamic_cast<const MpiCommunicator*>(&members);
  wait_with_watchdog(
      [&] {
        const cudaError_t status = query();
        if (status == cudaErrorNotReady) return false;
        CHECK_CUDA(status);
        return true;
      },
      "the wait for the GPU step (its NCCL gradient all-reduce)", mpi ? mpi->handle() : MPI_COMM_WORLD);
}

}  // namespace

void GpuWait::for_stream(const CudaStream& stream) const {
  if (collective_timeout() <= 0) {
    stream.synchronize();
    return;
  }
  poll_under_watchdog([&] { return stream.query(); }, members_);
}

void GpuWait::for_event(const CudaEvent& event) const {
  if (collective_timeout() <= 0) {
    event.synchronize();
    return;
  }
  poll_under_watchdog([&] { return event.query(); }, members_);
}

}  // namespace sb::cuda
