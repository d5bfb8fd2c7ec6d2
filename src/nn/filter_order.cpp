#include "nn/filter_order.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace sb {

std::vector<FilterSegment> filter_segments(const std::vector<ParamSpec>& params) {
  std::vector<FilterSegment> segments;
  for (const ParamSpec& p : params) {
    if (p.shape.rank() != 4) continue;
    const FilterSegment s{p.offset, p.shape[0], p.shape[1], p.shape[2] * p.shape[3]};
    if (s.c > 1 && s.rs > 1) segments.push_back(s);
  }
  return segments;
}

namespace {

// Each filter k is a [rows, cols] matrix transposed to [cols, rows].
void transpose_filters(const std::vector<FilterSegment>& segments, std::vector<float>& flat, bool to_krsc) {
  std::vector<float> scratch;
  for (const FilterSegment& s : segments) {
    const int64_t per_filter = s.c * s.rs, end = s.offset + s.k * per_filter;
    if (s.offset < 0 || end > static_cast<int64_t>(flat.size()))
      fatal("filter order: a filter of " + std::to_string(s.k * per_filter) + " values at " + std::to_string(s.offset) +
            " is outside a flat buffer of " + std::to_string(flat.size()));
    const int64_t rows = to_krsc ? s.c : s.rs, cols = to_krsc ? s.rs : s.c;
    scratch.resize(static_cast<size_t>(per_filter));
    for (int64_t k = 0; k < s.k; ++k) {
      float* filter = flat.data() + s.offset + k * per_filter;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) scratch[static_cast<size_t>(c * rows + r)] = filter[r * cols + c];
      std::copy(scratch.begin(), scratch.end(), filter);
    }
  }
}

}  // namespace

void filters_to_krsc(const std::vector<FilterSegment>& segments, std::vector<float>& flat) {
  transpose_filters(segments, flat, true);
}

void filters_to_kcrs(const std::vector<FilterSegment>& segments, std::vector<float>& flat) {
  transpose_filters(segments, flat, false);
}

}  // namespace sb
