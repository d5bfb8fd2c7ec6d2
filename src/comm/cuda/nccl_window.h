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
#include "comm/cuda/nccl_communicator.h"

namespace sb::cuda {

// The largest all-reduce (bytes) that goes through a symmetric window. Larger ones use NCCL's ring on plain
// buffers (the gradient buckets, and `comm`'s sweep so that it times what training runs): on 2 H200s over
// NVLink NCCL's symmetric kernels took 26 us against the ring's 33 us at 4 MiB and 72 against 77 us at
// 16 MiB, but 279 against 248 us at 64 MiB (`scalebench comm`, fp32; docs/performance.md).
constexpr size_t kLargestSymmetricAllreduceBytes = size_t{16} << 20;

// Why this communicator cannot use symmetric windows ("" when it can), the same answer on every rank:
// NCCL's library older than 2.27 on some rank, or ranks on more than one host. Collective over host_comm,
// whose ranks are the NCCL communicator's.
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
