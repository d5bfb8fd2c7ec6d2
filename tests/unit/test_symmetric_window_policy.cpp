// The host-side rules of the NCCL symmetric window (comm/symmetric_window_policy.h): when ranks may use
// one, where each gradient bucket lies in it, and where the others lie in the packed bf16 wire buffer.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "comm/symmetric_window_policy.h"

namespace sb {
namespace {

TEST(SymmetricWindowPolicy, RanksOnOneHostWithNccl227OrLaterMayUseAWindow) {
  EXPECT_EQ(symmetric_window_refusal_for(true, 22700, {"node1", "node1"}), "");
  EXPECT_EQ(symmetric_window_refusal_for(true, 22809, {"node1", "node1", "node1", "node1"}), "");
  EXPECT_EQ(symmetric_window_refusal_for(true, 22809, {"node1"}), "");
}

TEST(SymmetricWindowPolicy, EachRefusalSaysWhy) {
  const std::string old = symmetric_window_refusal_for(true, 22605, {"a", "a"});
  EXPECT_NE(old.find("NCCL 2.26"), std::string::npos) << old;
  EXPECT_NE(old.find("2.27"), std::string::npos) << old;
  const std::string hosts = symmetric_window_refusal_for(true, 22809, {"a", "a", "b", "b"});
  EXPECT_NE(hosts.find("several hosts"), std::string::npos) << hosts;
  const std::string headers = symmetric_window_refusal_for(false, 22809, {"a"});
  EXPECT_NE(headers.find("headers"), std::string::npos) << headers;
}

TEST(SymmetricWindowPolicy, SmallBucketsArePackedAtAlignedOffsetsAndLargeOnesStayOut) {
  const int64_t largest_fp32 = static_cast<int64_t>(kLargestSymmetricAllreduceBytes / 4);
  const std::vector<int64_t> counts = {largest_fp32 + 1, 1, 1000003, largest_fp32, 77, 64};
  const SymmetricWindowLayout layout = symmetric_window_layout(counts, 4);
  ASSERT_EQ(layout.offsets.size(), counts.size());
  EXPECT_EQ(layout.offsets[0], SymmetricWindowLayout::kNotInWindow) << "one element over the limit";
  EXPECT_NE(layout.offsets[3], SymmetricWindowLayout::kNotInWindow) << "exactly the limit";
  std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) of each bucket in the window
  for (size_t b = 0; b < counts.size(); ++b) {
    if (layout.offsets[b] == SymmetricWindowLayout::kNotInWindow) continue;
    EXPECT_EQ(layout.offsets[b] % 256, 0u) << "bucket " << b;
    spans.emplace_back(layout.offsets[b], layout.offsets[b] + static_cast<size_t>(counts[b]) * 4);
    EXPECT_LE(spans.back().second, layout.bytes) << "bucket " << b << " inside the window";
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].second, spans[i].first) << "no overlap";
  // Packed: no more than 255 bytes of padding after each bucket.
  size_t used = 0;
  for (const auto& [begin, end] : spans) used += end - begin;
  EXPECT_LT(layout.bytes, used + 256 * spans.size());
}

TEST(SymmetricWindowPolicy, TheLimitCountsTheWiresBytes) {
  // Twice the fp32 limit in elements fits in bf16 only up to the limit's bytes.
  const int64_t count = static_cast<int64_t>(kLargestSymmetricAllreduceBytes / 2);
  EXPECT_EQ(symmetric_window_layout({count}, 4).offsets[0], SymmetricWindowLayout::kNotInWindow);
  EXPECT_EQ(symmetric_window_layout({count}, 2).offsets[0], 0u);
  EXPECT_EQ(symmetric_window_layout({count + 1}, 2).offsets[0], SymmetricWindowLayout::kNotInWindow);
}

TEST(SymmetricWindowPolicy, NoBucketInTheWindowMeansNoWindow) {
  const int64_t large = static_cast<int64_t>(kLargestSymmetricAllreduceBytes);
  const SymmetricWindowLayout layout = symmetric_window_layout({large, large}, 4);
  EXPECT_EQ(layout.bytes, 0u);
  EXPECT_EQ(symmetric_window_layout({}, 4).bytes, 0u);
}

TEST(SymmetricWindowPolicy, TheBucketsOutsideTheWindowArePackedOneAfterAnother) {
  // bf16: two buckets over the limit with one in the window between them, and one after.
  const int64_t over = static_cast<int64_t>(kLargestSymmetricAllreduceBytes / 2) + 3;
  const std::vector<int64_t> counts = {over, 5, over + 10, 7};
  const SymmetricWindowLayout layout = symmetric_window_layout(counts, 2);
  const PackedOutsideWindow packed = pack_outside_window(counts, layout);
  ASSERT_EQ(packed.offsets.size(), counts.size());
  EXPECT_EQ(packed.offsets[0], 0u);
  EXPECT_EQ(packed.offsets[2], static_cast<size_t>(over)) << "right after the first, the window's bucket takes no room";
  EXPECT_EQ(packed.elements, static_cast<size_t>(over + over + 10));
}

TEST(SymmetricWindowPolicy, WithoutAWindowEveryBucketIsPacked) {
  const std::vector<int64_t> counts = {3, 1, 4};
  SymmetricWindowLayout none;
  none.offsets.assign(counts.size(), SymmetricWindowLayout::kNotInWindow);
  const PackedOutsideWindow packed = pack_outside_window(counts, none);
  EXPECT_EQ(packed.offsets, (std::vector<size_t>{0, 3, 4}));
  EXPECT_EQ(packed.elements, 8u);
}

TEST(SymmetricWindowPolicy, WhenEveryBucketIsInTheWindowNothingIsPacked) {
  const std::vector<int64_t> counts = {3, 1, 4};
  const PackedOutsideWindow packed = pack_outside_window(counts, symmetric_window_layout(counts, 2));
  EXPECT_EQ(packed.elements, 0u);
}

}  // namespace
}  // namespace sb
