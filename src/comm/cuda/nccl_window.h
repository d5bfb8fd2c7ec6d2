// A device buffer registered on every rank of an NCCL communicator as one symmetric memory window
// (NCCL 2.27+: ncclMemAlloc, then ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC). A collective whose
// buffers lie at the same offset of such a window on every rank may run on NCCL's symmetric kernels, which
// load and store straight into the peers' windows over NVLink: a small all-reduce then takes a few
// microseconds where the ring takes several hops (docs/architecture.md, "Symmetric memory").
// Those kernels sum only (no ncclAvg) and serve communicators within one NVLink domain.
// C++20 (std::span): include it from .cpp files.
#pragma once
#include <cstddef>
#include <string>

#include "comm/communicator.h"
#include "comm/symmetric_window_policy.h"
#include "comm/cuda/nccl_communicator.h"

namespace sb::cuda {

// Why this communicator cannot use symmetric windows ("" when it can), the same answer on every rank
// (symmetric_window_refusal_for: NCCL older than 2.27 on some rank, or ranks on more than one host).
// Collective over host_comm, whose ranks are the NCCL communicator's.
std::string symmetric_window_refusal(Communicator& host_comm);

class NcclWindow {
 public:
  // Collective over nccl's ranks, each with the same `bytes`. Allocates with ncclMemAlloc and registers.
  NcclWindow(NcclCommunicator& nccl, size_t bytes);
  // Deregisters (unless the communicator was aborted) and frees; the caller has synchronised the streams
  // that use the window.
  ~NcclWindow();
  NcclWindow(const NcclWindow&) = delete;
  NcclWindow& operator=(const NcclWindow&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  NcclCommunicator& nccl_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  void* window_ = nullptr;  // ncclWindow_t, kept opaque so that older NCCL headers still compile this header
};

}  // namespace sb::cuda
