// The all-reduce bucket plan: contiguous, tensor-aligned, in the order backward finishes them, at least a
// bucket's worth each except the remainder, and a small last bucket for the first layers.
#include <gtest/gtest.h>

#include <set>

#include "models/registry.h"
#include "train/engines/bucket_plan.h"

namespace sb {
namespace {

std::vector<ParamSpec> tensors(const std::vector<int64_t>& sizes) {
  std::vector<ParamSpec> params;
  int64_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    ParamSpec p;
    p.name = "t" + std::to_string(i);
    p.shape = Shape{sizes[i]};
    p.offset = offset;
    offset += sizes[i];
    params.push_back(p);
  }
  return params;
}

std::vector<std::pair<int64_t, int64_t>> ranges(const std::vector<Bucket>& buckets) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& b : buckets) out.emplace_back(b.begin, b.end);
  return out;
}

TEST(BucketPlan, SmallLeadingTensorsFormTheTailAndTheRestIsCutFromTheEnd) {
  // Offsets: 0, 10, 30, 130, 430, 930.
  const auto params = tensors({10, 20, 100, 300, 500, 200});
  using R = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(ranges(plan_buckets(params, 400, 40)), (R{{430, 1130}, {30, 430}, {0, 30}}));
  // A tail limit below the first tensor still gives it a bucket of its own.
  EXPECT_EQ(ranges(plan_buckets(params, 400, 0)), (R{{430, 1130}, {30, 430}, {10, 30}, {0, 10}}));
  // The remainder between the last full bucket and the tail is a bucket of its own.
  EXPECT_EQ(ranges(plan_buckets(params, 600, 40)), (R{{430, 1130}, {30, 430}, {0, 30}}));
  EXPECT_EQ(ranges(plan_buckets(params, 1000, 40)), (R{{130, 1130}, {30, 130}, {0, 30}}));
}

TEST(BucketPlan, EverythingFitsInTheTailGivesOneBucket) {
  using R = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(ranges(plan_buckets(tensors({3, 4, 5}), 100, 12)), (R{{0, 12}}));
  EXPECT_EQ(ranges(plan_buckets(tensors({7}), 1, 0)), (R{{0, 7}}));
  EXPECT_TRUE(plan_buckets({}, 100, 10).empty());
}

TEST(BucketPlan, WideResNetAt25MiBCoversTheBufferWithASmallTail) {
  const auto params = collect_params(build_model("wrn", ModelInput{3, 32, 32, 100}));
  const int64_t bucket = 25 * 1024 * 1024 / 4;
  const auto buckets = plan_buckets(params, bucket, default_tail_elements(bucket));
  std::set<int64_t> offsets;
  for (const auto& p : params) offsets.insert(p.offset);
  const int64_t total = params.back().offset + params.back().shape.numel();
  ASSERT_GE(buckets.size(), 3u);
  EXPECT_EQ(buckets.front().end, total);
  EXPECT_EQ(buckets.back().begin, 0);
  for (size_t i = 0; i < buckets.size(); ++i) {
    EXPECT_LT(buckets[i].begin, buckets[i].end) << i;
    EXPECT_TRUE(offsets.count(buckets[i].begin)) << "bucket " << i << " starts inside a tensor";
    if (i + 1 < buckets.size()) { EXPECT_EQ(buckets[i + 1].end, buckets[i].begin) << "gap or overlap after bucket " << i; }
    if (i + 2 < buckets.size()) { EXPECT_GE(buckets[i].end - buckets[i].begin, bucket) << i; }
  }
  EXPECT_LE(buckets.back().end, default_tail_elements(bucket));
  EXPECT_GT(buckets.back().end, 0);
}

}  // namespace
}  // namespace sb
