#include "comm/cuda/nccl_communicator.h"

#include <cstdlib>
#include <mutex>
#include <utility>

#include "core/cuda_check.h"
#include "core/error.h"

namespace sb::cuda {

namespace {
// NCCL's graph-mixing support lets a collective run outside a CUDA graph while a graph with collectives of
// the same communicator still runs; it costs every captured collective an event record and wait across
// NCCL's internal stream, a few microseconds of idle GPU before each all-reduce of a step graph
// (docs/performance.md, "NCCL's graph mixing"). Every launch of a scalebench process either is inside a
// step graph or waits for the graphs before it (the CUDA engine synchronises first), so the support is
// turned off, unless the environment names a value. NCCL reads it once, at its first communicator.
constexpr const char* kGraphMixingVariable = "NCCL_GRAPH_MIXING_SUPPORT";
void turn_off_graph_mixing_unless_set() { setenv(kGraphMixingVariable, "0", /*overwrite=*/0); }
}  // namespace

struct NcclCommunicator::Shared {
  std::mutex mutex;
  ncclComm_t comm = nullptr;  // null once destroyed, so a later fatal error does not touch it
};

NcclCommunicator::NcclCommunicator(Communicator& host_comm)
    : shared_(std::make_shared<Shared>()), rank_(host_comm.rank()), size_(host_comm.size()) {
  turn_off_graph_mixing_unless_set();
  ncclUniqueId id{};
  if (rank_ == 0) CHECK_NCCL(ncclGetUniqueId(&id));
  host_comm.broadcast(std::span<char>(id.internal, sizeof id.internal), 0);
  ncclComm_t comm = nullptr;
  CHECK_NCCL(ncclCommInitRank(&comm, size_, id, rank_));
  shared_->comm = comm;
  // A fatal error on this rank aborts the communicator, so that peers blocked in a collective with us
  // see an error instead of hanging until the job's time limit.
  std::weak_ptr<Shared> weak = shared_;
  add_abort_hook([weak] {
    if (auto shared = weak.lock()) {
      std::lock_guard<std::mutex> lock(shared->mutex);
      if (shared->comm != nullptr) ncclCommAbort(shared->comm);  // best effort: we are aborting anyway
      shared->comm = nullptr;
    }
  });
}

NcclCommunicator::~NcclCommunicator() {
  ncclComm_t comm = nullptr;
  {
    // Released before destroying: a failed destroy runs the abort hook, which takes this lock.
    std::lock_guard<std::mutex> lock(shared_->mutex);
    std::swap(comm, shared_->comm);
  }
  if (comm != nullptr) CHECK_NCCL(ncclCommDestroy(comm));
}

ncclComm_t NcclCommunicator::handle() const { return shared_->comm; }

void NcclCommunicator::allreduce(const void* send, void* received, size_t count, ncclDataType_t type, ncclRedOp_t op,
                                 cudaStream_t stream) {
  if (count == 0) return;
  CHECK_NCCL(ncclAllReduce(send, received, count, type, op, shared_->comm, stream));
}

void NcclCommunicator::broadcast(void* data, size_t count, ncclDataType_t type, int root, cudaStream_t stream) {
  if (count == 0) return;
  CHECK_NCCL(ncclBroadcast(data, data, count, type, root, shared_->comm, stream));
}

std::string nccl_version_string() {
  int code = 0;
  CHECK_NCCL(ncclGetVersion(&code));
  // Since 2.9 the code is major*10000 + minor*100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

}  // namespace sb::cuda
