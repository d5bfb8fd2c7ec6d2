#include "comm/cuda/nccl_window.h"

#include <algorithm>
#include <vector>

#include "comm/string_collectives.h"
#include "core/cuda_check.h"
#include "core/error.h"
#include "core/host_name.h"

namespace sb::cuda {
namespace {

#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
constexpr bool kHeadersHaveWindows = true;
#else
constexpr bool kHeadersHaveWindows = false;
#endif
constexpr int kFirstVersionWithWindows = 22700;  // ncclGetVersion's code of 2.27.0

}  // namespace

std::string symmetric_window_refusal(Communicator& host_comm) {
  int version = 0;
  CHECK_NCCL(ncclGetVersion(&version));
  const int oldest = host_comm.allreduce_min(version);
  const std::vector<std::string> hosts = allgather_strings(host_comm, this_host_name());
  if (!kHeadersHaveWindows) return "this build's NCCL headers are older than 2.27";
  if (oldest < kFirstVersionWithWindows)
    return "NCCL " + std::to_string(oldest / 10000) + "." + std::to_string(oldest / 100 % 100) +
           " on some rank; symmetric memory needs 2.27 or later";
  if (std::any_of(hosts.begin(), hosts.end(), [&](const std::string& h) { return h != hosts.front(); }))
    return "the ranks span several hosts; NCCL's symmetric kernels serve one NVLink domain";
  return "";
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
