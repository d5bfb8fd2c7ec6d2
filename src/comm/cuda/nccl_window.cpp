#include "comm/cuda/nccl_window.h"

#include <vector>

#include "comm/string_collectives.h"
#include "core/cuda_check.h"
#include "core/error.h"
#include "core/host_name.h"

namespace sb::cuda {
std::string symmetric_window_refusal(Communicator& host_comm) {
  int version = 0;
  CHECK_NCCL(ncclGetVersion(&version));
  const int oldest = host_comm.allreduce_min(version);
  const std::vector<std::string> hosts = allgather_strings(host_comm, this_host_name());
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  return symmetric_window_refusal_for(true, oldest, hosts);
#else
  return symmetric_window_refusal_for(false, oldest, hosts);
#endif
}

NcclWindow::NcclWindow(NcclCommunicator& nccl, size_t bytes) : nccl_(nccl), bytes_(bytes) {
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  CHECK_NCCL(ncclMemAlloc(&data_, bytes_));
  ncclWindow_t window = nullptr;
  CHECK_NCCL(ncclCommWindowRegister(nccl_.handle(), data_, bytes_, &window, NCCL_WIN_COLL_SYMMETRIC));
  window_ = window;
#else
  fatal("NcclWindow: this build's NCCL headers are older than 2.27 (check symmetric_window_refusal first)");
#endif
}

NcclWindow::~NcclWindow() {
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  // An aborted communicator (a fatal error on this rank) has no windows left to deregister.
  if (window_ != nullptr && nccl_.handle() != nullptr)
    CHECK_NCCL(ncclCommWindowDeregister(nccl_.handle(), static_cast<ncclWindow_t>(window_)));
  if (data_ != nullptr) CHECK_NCCL(ncclMemFree(data_));
#endif
}

}  // namespace sb::cuda
