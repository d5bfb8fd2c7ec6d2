#include "comm/cuda/nccl_collective_calls.h"

#include "core/cuda_check.h"
#include "core/error.h"

namespace sb::cuda {

void run_nccl_collective(CollectiveKind kind, const void* send, void* receive, int64_t per_rank, ncclDataType_t type,
                         ncclComm_t comm, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(per_rank);
  switch (kind) {
    case CollectiveKind::AllReduce: CHECK_NCCL(ncclAllReduce(send, receive, n, type, ncclSum, comm, stream)); return;
    case CollectiveKind::ReduceScatter: CHECK_NCCL(ncclReduceScatter(send, receive, n, type, ncclSum, comm, stream)); return;
    case CollectiveKind::AllGather: CHECK_NCCL(ncclAllGather(send, receive, n, type, comm, stream)); return;
    case CollectiveKind::Broadcast:
      CHECK_NCCL(ncclBroadcast(send, receive, n, type, kBroadcast.root, comm, stream));
      return;
  }
  fatal("run_nccl_collective: unknown collective code " + std::to_string(static_cast<int>(kind)));
}

}  // namespace sb::cuda
