#include "comm/symmetric_window_policy.h"

#include <algorithm>

namespace sb {

std::string symmetric_window_refusal_for(bool headers_have_windows, int oldest_nccl_version,
                                         const std::vector<std::string>& hosts) {
  if (!headers_have_windows) return "this build's NCCL headers are older than 2.27";
  if (oldest_nccl_version < kFirstNcclVersionWithWindows)
    return "NCCL " + std::to_string(oldest_nccl_version / 10000) + "." + std::to_string(oldest_nccl_version / 100 % 100) +
           " on some rank; symmetric memory needs 2.27 or later";
  if (std::any_of(hosts.begin(), hosts.end(), [&](const std::string& h) { return h != hosts.front(); }))
    return "the ranks span several hosts; NCCL's symmetric kernels serve one NVLink domain";
  return "";
}

SymmetricWindowLayout symmetric_window_layout(const std::vector<int64_t>& counts, size_t element_bytes) {
  constexpr size_t kAlignment = 256;
  SymmetricWindowLayout layout;
  layout.offsets.assign(counts.size(), SymmetricWindowLayout::kNotInWindow);
  for (size_t b = 0; b < counts.size(); ++b) {
    const size_t bytes = static_cast<size_t>(counts[b]) * element_bytes;
    if (bytes > kLargestSymmetricAllreduceBytes) continue;
    layout.offsets[b] = layout.bytes;
    layout.bytes += (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  return layout;
}

PackedOutsideWindow pack_outside_window(const std::vector<int64_t>& counts, const SymmetricWindowLayout& layout) {
  PackedOutsideWindow packed;
  packed.offsets.assign(counts.size(), 0);
  for (size_t b = 0; b < counts.size(); ++b) {
    if (b < layout.offsets.size() && layout.offsets[b] != SymmetricWindowLayout::kNotInWindow) continue;
    packed.offsets[b] = packed.elements;
    packed.elements += static_cast<size_t>(counts[b]);
  }
  return packed;
}

}  // namespace sb
