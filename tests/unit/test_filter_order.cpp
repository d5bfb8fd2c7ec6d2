// The two orders of convolution filters in flat parameter vectors (src/nn/filter_order.h).
#include <gtest/gtest.h>

#include <numeric>

#include "nn/filter_order.h"
#include "nn/spec.h"

namespace sb {
namespace {

TEST(FilterOrder, FindsTheFiltersWhoseOrdersDiffer) {
  // A 3x3 filter bank, a 1x1 one (same in both orders), a one-channel 3x3 one (likewise), a linear layer.
  const LayerSpec net = sequential("net", {conv2d("a", 1, 4, 3, 1, 1, false), conv2d("b", 4, 6, 3, 1, 1, true),
                                           conv2d("c", 6, 5, 1, 1, 0, false), linear("d", 5, 2, true)});
  const std::vector<ParamSpec> params = collect_params(net);
  const std::vector<FilterSegment> segments = filter_segments(params);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].offset, 4 * 1 * 9);  // after a's weights (a has no bias)
  EXPECT_EQ(segments[0].k, 6);
  EXPECT_EQ(segments[0].c, 4);
  EXPECT_EQ(segments[0].rs, 9);
}

TEST(FilterOrder, MovesEachElementToItsKrscPlaceAndBack) {
  const int64_t k = 3, c = 5, r = 2, s = 3, offset = 7;
  const std::vector<FilterSegment> segments{{offset, k, c, r * s}};
  std::vector<float> flat(static_cast<size_t>(offset + k * c * r * s + 4));
  std::iota(flat.begin(), flat.end(), 0.0f);
  const std::vector<float> original = flat;
  filters_to_krsc(segments, flat);
  for (int64_t ki = 0; ki < k; ++ki)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t ri = 0; ri < r; ++ri)
        for (int64_t si = 0; si < s; ++si) {
          const int64_t kcrs = ((ki * c + ci) * r + ri) * s + si, krsc = ((ki * r + ri) * s + si) * c + ci;
          EXPECT_EQ(flat[static_cast<size_t>(offset + krsc)], original[static_cast<size_t>(offset + kcrs)]);
        }
  for (int64_t i = 0; i < offset; ++i) EXPECT_EQ(flat[static_cast<size_t>(i)], original[static_cast<size_t>(i)]);
  for (size_t i = flat.size() - 4; i < flat.size(); ++i) EXPECT_EQ(flat[i], original[i]);
  filters_to_kcrs(segments, flat);
  EXPECT_EQ(flat, original);
}

TEST(FilterOrder, RefusesASegmentOutsideTheVector) {
  std::vector<float> flat(10);
  EXPECT_DEATH(filters_to_krsc({{4, 1, 2, 4}}, flat), "outside a flat buffer of 10");
}

}  // namespace
}  // namespace sb
