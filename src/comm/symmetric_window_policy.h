// When the gradient all-reduces go through an NCCL symmetric memory window, and where each bucket lies in
// it: host-only rules, so that CI tests them (the window itself: comm/cuda/nccl_window.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sb {

// The largest all-reduce (bytes) that goes through a symmetric window. Larger ones use NCCL's ring on plain
// buffers (the gradient buckets, and `comm`'s sweep so that it times what training runs): on 2 H200s over
// NVLink NCCL's symmetric kernels took 26 us against the ring's 33 us at 4 MiB and 72 against 77 us at
// 16 MiB, but 279 against 248 us at 64 MiB (`scalebench comm`, fp32; docs/performance.md).
constexpr size_t kLargestSymmetricAllreduceBytes = size_t{16} << 20;

// ncclGetVersion's code of NCCL 2.27.0, the first with symmetric windows.
constexpr int kFirstNcclVersionWithWindows = 22700;

// Why ranks cannot use symmetric windows, "" when they can: `headers_have_windows` (this build's NCCL
// headers declare them), the oldest NCCL library among the ranks (ncclGetVersion's code) and every
// rank's host name (NCCL's symmetric kernels serve one NVLink domain).
std::string symmetric_window_refusal_for(bool headers_have_windows, int oldest_nccl_version,
                                         const std::vector<std::string>& hosts);

// Where the buckets of `counts` elements of `element_bytes` go in one window: the buckets of at most
// kLargestSymmetricAllreduceBytes one after another at 256-byte boundaries (for the kernels' vector
// accesses), the others nowhere. Every rank plans the same buckets, so every rank gets the same offsets,
// as NCCL's symmetric kernels require.
struct SymmetricWindowLayout {
  static constexpr size_t kNotInWindow = static_cast<size_t>(-1);
  std::vector<size_t> offsets;  // by bucket: its byte offset in the window, or kNotInWindow
  size_t bytes = 0;             // the window's size (0: no bucket uses it)
};
SymmetricWindowLayout symmetric_window_layout(const std::vector<int64_t>& counts, size_t element_bytes);

// Where the bf16 wire of each bucket outside the window lies in one buffer: those buckets one after
// another, in bucket order, with no gaps (the bf16 wire of a bucket in the window is cast into its slot, so
// it takes no room here).
struct PackedOutsideWindow {
  std::vector<size_t> offsets;  // by bucket: its element offset in the buffer (0 for a bucket in the window)
  size_t elements = 0;          // the buffer's length (0: every bucket is in the window)
};
PackedOutsideWindow pack_outside_window(const std::vector<int64_t>& counts, const SymmetricWindowLayout& layout);

}  // namespace sb
