// Convolution filters are [K, C, R, S] in the spec, on the CPU and in every file (checkpoints, results).
// The CUDA engine under NHWC keeps them K, R, S, C in its flat device buffers (cuDNN's filter layout for
// NHWC data): the weights, their gradients, their compute-dtype copy and the optimizer's state, so that no
// pass transposes a filter in each forward and backward. These functions reorder a flat host vector of a
// network's parameters, or of anything laid out like them, between the two orders.
#pragma once
#include <cstdint>
#include <vector>

#include "nn/spec.h"

namespace sb {

// One filter whose two orders differ (C > 1 and R * S > 1), at its offset in the flat buffer.
struct FilterSegment {
  int64_t offset = 0, k = 0, c = 0, rs = 0;
};

// The filters among a network's parameters (the rank-4 ones), in buffer order.
std::vector<FilterSegment> filter_segments(const std::vector<ParamSpec>& params);

// In place over a flat vector at least as long as the last segment's end: [K, C, R, S] -> [K, R, S, C], and back.
void filters_to_krsc(const std::vector<FilterSegment>& segments, std::vector<float>& flat);
void filters_to_kcrs(const std::vector<FilterSegment>& segments, std::vector<float>& flat);

}  // namespace sb
