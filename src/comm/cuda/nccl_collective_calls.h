// The NCCL call of each collective of the `comm` sweep (comm/collective.h holds the rest of each row):
// one case per collective, enqueued on `stream`. C++20: include it from .cpp files.
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>

#include "comm/collective.h"

namespace sb::cuda {

// `send` and `receive` as the collective takes them (in place: send inside receive, at the collective's
// input offset); `per_rank` is Collective::per_rank_count.
void run_nccl_collective(CollectiveKind kind, const void* send, void* receive, int64_t per_rank, ncclDataType_t type,
                         ncclComm_t comm, cudaStream_t stream);

}  // namespace sb::cuda
