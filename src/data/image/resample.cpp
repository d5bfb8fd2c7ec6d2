#include "data/image/resample.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sb {
namespace {

// One axis' taps as a table: each output's window start and `taps` weights, zero padded to the axis'
// longest window, the window moved left where it would pass the image's end. The padding adds products
// 0 * p = +0 before or after the real taps, which leaves every sum as resized_crop.h defines it, and
// gives the inner loops one trip count.
struct AxisTable {
  int taps = 1;
  int lo = 0, hi = 0;           // the source indices any window reads: [lo, hi)
  std::vector<int> start;       // out_size
  std::vector<float> weights;   // out_size x taps
  std::vector<AxisTaps> exact;  // scratch
};

void build_axis(const ResampleAxis& axis, int out_size, AxisTable& t) {
  t.exact.resize(static_cast<size_t>(out_size));
  t.taps = 1;
  for (int o = 0; o < out_size; ++o) {
    t.exact[static_cast<size_t>(o)] = resample_taps(axis, o);
    t.taps = std::max(t.taps, t.exact[static_cast<size_t>(o)].count);
  }
  t.start.resize(static_cast<size_t>(out_size));
  t.weights.assign(static_cast<size_t>(out_size) * static_cast<size_t>(t.taps), 0.0f);
  t.lo = axis.in_size;
  t.hi = 0;
  for (int o = 0; o < out_size; ++o) {
    const AxisTaps& taps = t.exact[static_cast<size_t>(o)];
    const int start = std::min(taps.first, axis.in_size - t.taps);
    t.start[static_cast<size_t>(o)] = start;
    float* w = &t.weights[static_cast<size_t>(o) * static_cast<size_t>(t.taps)];
    for (int k = 0; k < taps.count; ++k) w[taps.first - start + k] = resample_weight(axis, taps, k);
    t.lo = std::min(t.lo, start);
    t.hi = std::max(t.hi, start + t.taps);
  }
}

struct Scratch {
  AxisTable columns, rows;
  std::vector<float> source_row;  // one source row's [columns.lo, columns.hi) as floats
  std::vector<float> filtered;    // the horizontally filtered rows [rows.lo, rows.hi), out_width x C each
  std::vector<float> sum;         // one output row before rounding
  std::vector<uint8_t> bytes;     // one output row, not yet mirrored
};

// The filters' loops come compiled for each tap count up to kUnrolledTaps (Taps), which lets the compiler
// keep the sums in registers and vectorise; Taps = 0 reads the count at run time. Both add the products
// in tap order, starting from 0.
constexpr int kUnrolledTaps = 8;

// One source row (as floats, from columns.lo) filtered horizontally into `dst` (out_width x C floats).
template <int C, int Taps>
void filter_row(const float* source, const AxisTable& cols, float* dst) {
  const int taps = Taps > 0 ? Taps : cols.taps, out_width = static_cast<int>(cols.start.size());
  const int* start = cols.start.data();
  const float* weights = cols.weights.data();
  for (int x = 0; x < out_width; ++x) {
    const float* p = source + (start[x] - cols.lo) * C;
    const float* w = weights + static_cast<ptrdiff_t>(x) * taps;
    float h[C] = {};
    for (int k = 0; k < taps; ++k)
      for (int c = 0; c < C; ++c) h[c] += w[k] * p[k * C + c];
    for (int c = 0; c < C; ++c) dst[x * C + c] = h[c];
  }
}

// sum[i] = sum over k of w[k] * rows[k][i], for i < n.
template <int Taps>
void combine_rows(const float* const* rows, const float* w, int taps, int n, float* sum) {
  if constexpr (Taps > 0) {
    for (int i = 0; i < n; ++i) {
      float s = 0.0f;
      for (int k = 0; k < Taps; ++k) s += w[k] * rows[k][i];
      sum[i] = s;
    }
  } else {
    std::fill(sum, sum + n, 0.0f);
    for (int k = 0; k < taps; ++k)
      for (int i = 0; i < n; ++i) sum[i] += w[k] * rows[k][i];
  }
}

template <typename F, int... Taps>
F pick_unrolled(int taps, F any, std::integer_sequence<int, Taps...>, const F* unrolled) {
  return taps >= 1 && taps <= static_cast<int>(sizeof...(Taps)) ? unrolled[taps - 1] : any;
}

using RowFilter = void (*)(const float*, const AxisTable&, float*);
using RowCombiner = void (*)(const float* const*, const float*, int, int, float*);

template <int C, int... K>
RowFilter row_filter(int taps, std::integer_sequence<int, K...> seq) {
  static constexpr RowFilter unrolled[] = {&filter_row<C, K + 1>...};
  return pick_unrolled(taps, &filter_row<C, 0>, seq, unrolled);
}

template <int... K>
RowCombiner row_combiner(int taps, std::integer_sequence<int, K...> seq) {
  static constexpr RowCombiner unrolled[] = {&combine_rows<K + 1>...};
  return pick_unrolled(taps, &combine_rows<0>, seq, unrolled);
}

template <int C>
void resample(const uint8_t* src, int width, const ResizedCropBox& box, int out_width, int out_height, uint8_t* out,
              Scratch& s) {
  const AxisTable &cols = s.columns, &rows = s.rows;
  const RowFilter filter = row_filter<C>(cols.taps, std::make_integer_sequence<int, kUnrolledTaps>{});
  const RowCombiner combine = row_combiner(rows.taps, std::make_integer_sequence<int, kUnrolledTaps>{});
  const int row_values = out_width * C, source_values = (cols.hi - cols.lo) * C;
  s.source_row.resize(static_cast<size_t>(source_values));
  s.filtered.resize(static_cast<size_t>(rows.hi - rows.lo) * static_cast<size_t>(row_values));
  s.sum.resize(static_cast<size_t>(row_values));
  s.bytes.resize(static_cast<size_t>(row_values));
  std::vector<const float*> window(static_cast<size_t>(rows.taps));
  const auto filtered_row = [&](int y) { return &s.filtered[static_cast<size_t>(y - rows.lo) * static_cast<size_t>(row_values)]; };
  int filtered_end = rows.lo;  // rows below this one are filtered; windows only move down
  for (int y = 0; y < out_height; ++y) {
    const int start = rows.start[static_cast<size_t>(y)];
    for (; filtered_end < start + rows.taps; ++filtered_end) {
      const uint8_t* row = src + (static_cast<size_t>(filtered_end) * static_cast<size_t>(width) + static_cast<size_t>(cols.lo)) * C;
      float* source = s.source_row.data();
      for (int i = 0; i < source_values; ++i) source[i] = static_cast<float>(row[i]);
      filter(source, cols, filtered_row(filtered_end));
    }
    for (int k = 0; k < rows.taps; ++k) window[static_cast<size_t>(k)] = filtered_row(start + k);
    combine(window.data(), &rows.weights[static_cast<size_t>(y) * static_cast<size_t>(rows.taps)], rows.taps, row_values,
            s.sum.data());
    uint8_t* line = out + static_cast<size_t>(y) * static_cast<size_t>(row_values);
    uint8_t* bytes = box.flip ? s.bytes.data() : line;
    const float* sum = s.sum.data();
    for (int i = 0; i < row_values; ++i) bytes[i] = static_cast<uint8_t>(resampled_byte(sum[i]));
    if (box.flip)
      for (int x = 0; x < out_width; ++x)
        for (int c = 0; c < C; ++c) line[(out_width - 1 - x) * C + c] = bytes[x * C + c];
  }
}

}  // namespace

void resample_crop(const uint8_t* src, int width, int height, int channels, const ResizedCropBox& box, int out_width,
                   int out_height, uint8_t* out) {
  if (width < 1 || height < 1)
    throw std::invalid_argument("resample_crop: empty source image " + std::to_string(width) + "x" +
                                std::to_string(height));
  if (out_width < 1 || out_height < 1)
    throw std::invalid_argument("resample_crop: output size " + std::to_string(out_width) + "x" +
                                std::to_string(out_height) + " must be at least 1x1");
  if (channels != 1 && channels != 3)
    throw std::invalid_argument("resample_crop: " + std::to_string(channels) +
                                " channels; give 1 (grey) or 3 (RGB) interleaved channels");
  if (!(box.width > 0) || !(box.height > 0))
    throw std::invalid_argument("resample_crop: crop box " + std::to_string(box.width) + "x" +
                                std::to_string(box.height) + " is empty");
  thread_local Scratch scratch;
  build_axis(resample_axis(box.x, box.width, out_width, width), out_width, scratch.columns);
  build_axis(resample_axis(box.y, box.height, out_height, height), out_height, scratch.rows);
  if (channels == 3)
    resample<3>(src, width, box, out_width, out_height, out, scratch);
  else
    resample<1>(src, width, box, out_width, out_height, out, scratch);
}

}  // namespace sb
