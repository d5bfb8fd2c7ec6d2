// The distributed sampler (torch DistributedSampler semantics), the Philox shuffle and batching.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

#include "core/error.h"
#include "data/sampler.h"
#include "data/shuffle.h"

namespace sb {
namespace {

using Indices = std::vector<int64_t>;

// The global order the ranks' lists came from: position r + i*W is rank r's i-th index.
Indices interleave(int64_t n, int world, bool shuffle, uint64_t seed, bool drop_last, int64_t epoch) {
  std::vector<Indices> per_rank;
  for (int r = 0; r < world; ++r)
    per_rank.push_back(DistributedSampler(n, world, r, shuffle, seed, drop_last).indices(epoch));
  Indices order;
  for (size_t i = 0; i < per_rank[0].size(); ++i)
    for (int r = 0; r < world; ++r) order.push_back(per_rank[r][i]);
  return order;
}

TEST(Shuffle, IsAPermutationAndDeterministic) {
  for (int64_t n : {0, 1, 2, 3, 17, 1000}) {
    Indices p = philox_permutation(n, 7);
    EXPECT_EQ(p, philox_permutation(n, 7));
    std::sort(p.begin(), p.end());
    Indices identity(static_cast<size_t>(n));
    std::iota(identity.begin(), identity.end(), 0);
    EXPECT_EQ(p, identity);
  }
  EXPECT_NE(philox_permutation(1000, 7), philox_permutation(1000, 8));
}

// Locks the documented mapping (shuffle.h): a change would silently change every run's data order.
TEST(Shuffle, GoldenValues) { EXPECT_EQ(philox_permutation(10, 42), (Indices{6, 2, 0, 9, 7, 3, 1, 8, 4, 5})); }

TEST(Shuffle, AllPermutationsOfThreeAreAboutEquallyLikely) {
  std::map<Indices, int> counts;
  for (uint64_t key = 0; key < 6000; ++key) ++counts[philox_permutation(3, key)];
  EXPECT_EQ(counts.size(), 6u);
  for (const auto& [perm, count] : counts) EXPECT_NEAR(count, 1000, 150);
}

TEST(DistributedSampler, SizesForWorldSizesOneToFive) {
  for (int64_t n : {1, 2, 3, 4, 7, 10, 11, 13, 60, 101}) {
    for (int world = 1; world <= 5; ++world) {
      for (bool drop_last : {false, true}) {
        const int64_t expected = drop_last ? n / world : (n + world - 1) / world;
        for (int rank = 0; rank < world; ++rank) {
          DistributedSampler s(n, world, rank, true, 3, drop_last);
          EXPECT_EQ(s.num_samples(), expected) << "n=" << n << " world=" << world;
          EXPECT_EQ(s.total_size(), expected * world);
          EXPECT_EQ(static_cast<int64_t>(s.indices(5).size()), expected);
        }
      }
    }
  }
}

TEST(DistributedSampler, WithoutDropLastUnionIsCompleteAndPaddingRepeatsTheStart) {
  for (int64_t n : {1, 2, 3, 7, 10, 12, 13, 101}) {
    for (int world = 1; world <= 5; ++world) {
      const Indices order = interleave(n, world, true, 11, false, 2);
      const Indices permutation = philox_permutation(n, 11 + 2);
      ASSERT_EQ(static_cast<int64_t>(order.size()), (n + world - 1) / world * world);
      for (size_t k = 0; k < order.size(); ++k) ASSERT_EQ(order[k], permutation[k % n]) << "n=" << n << " k=" << k;
      EXPECT_EQ(std::set<int64_t>(order.begin(), order.end()).size(), static_cast<size_t>(n));
    }
  }
}

TEST(DistributedSampler, DisjointAcrossRanksWhenNothingIsPadded) {
  for (bool drop_last : {false, true}) {
    for (int world = 1; world <= 5; ++world) {
      const int64_t n = drop_last ? 23 : 20 * world;  // drop_last: any n; else a multiple of world
      const Indices order = interleave(n, world, true, 5, drop_last, 0);
      const std::set<int64_t> unique(order.begin(), order.end());
      EXPECT_EQ(unique.size(), order.size()) << "a sample went to two ranks, world=" << world;
      EXPECT_EQ(static_cast<int64_t>(order.size()), n / world * world);
    }
  }
}

TEST(DistributedSampler, DropLastDropsTheTailOfThePermutation) {
  const Indices order = interleave(13, 4, true, 9, true, 1);
  const Indices permutation = philox_permutation(13, 10);
  EXPECT_EQ(order, Indices(permutation.begin(), permutation.begin() + 12));
  EXPECT_EQ(DistributedSampler(3, 5, 4, true, 0, true).indices(0).size(), 0u);
}

TEST(DistributedSampler, TorchInterleavingWithoutShuffle) {
  // torch: N=10, W=4, no shuffle -> order 0..9,0,1; rank r takes r, r+4, r+8.
  EXPECT_EQ(DistributedSampler(10, 4, 0, false).indices(0), (Indices{0, 4, 8}));
  EXPECT_EQ(DistributedSampler(10, 4, 2, false).indices(0), (Indices{2, 6, 0}));
  EXPECT_EQ(DistributedSampler(10, 4, 3, false).indices(0), (Indices{3, 7, 1}));
  EXPECT_EQ(DistributedSampler(10, 4, 3, false, 0, true).indices(0), (Indices{3, 7}));
  // N < W: padding wraps around the dataset more than once.
  EXPECT_EQ(DistributedSampler(2, 5, 4, false).indices(0), (Indices{0}));
  EXPECT_EQ(DistributedSampler(2, 5, 3, false).indices(7), (Indices{1}));
}

TEST(DistributedSampler, ReshuffledEachEpochAndSameOnEveryRank) {
  const int world = 3;
  const Indices e0 = interleave(300, world, true, 123, false, 0);
  const Indices e1 = interleave(300, world, true, 123, false, 1);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(e0, interleave(300, world, true, 123, false, 0));  // same seed and epoch: same order
  EXPECT_NE(e0, interleave(300, world, true, 124, false, 0));  // other seed: other order
  EXPECT_EQ(e0, philox_permutation(300, 123));                 // every rank drew from one permutation
  // seed + epoch: (seed 123, epoch 1) is (seed 124, epoch 0), as in torch.
  EXPECT_EQ(e1, interleave(300, world, true, 124, false, 0));
}

TEST(DistributedSampler, ShuffledOrderIsNotTheIdentity) {
  Indices identity(100);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(DistributedSampler(100, 1, 0, true, 0).indices(0), identity);
  EXPECT_EQ(DistributedSampler(100, 1, 0, false, 0).indices(3), identity);
}

TEST(DistributedSampler, RejectsBadArguments) {
  EXPECT_THROW(DistributedSampler(0, 1, 0), UserError);
  EXPECT_THROW(DistributedSampler(10, 0, 0), std::invalid_argument);
  EXPECT_THROW(DistributedSampler(10, 2, 2), std::invalid_argument);
  EXPECT_THROW(DistributedSampler(10, 2, -1), std::invalid_argument);
}

TEST(Batches, KeepOrDropTheLastPartialBatch) {
  const Indices idx{9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  const auto kept = split_batches(idx, 4, false);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0], (Indices{9, 8, 7, 6}));
  EXPECT_EQ(kept[2], (Indices{1, 0}));
  const auto dropped = split_batches(idx, 4, true);
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[1], (Indices{5, 4, 3, 2}));
  EXPECT_EQ(split_batches(idx, 5, true).size(), 2u);
  EXPECT_EQ(split_batches(idx, 11, true).size(), 0u);
  EXPECT_EQ(split_batches(idx, 11, false).size(), 1u);
  EXPECT_EQ(split_batches({}, 3, false).size(), 0u);
  EXPECT_EQ(num_batches(10, 4, false), 3);
  EXPECT_EQ(num_batches(10, 4, true), 2);
  EXPECT_EQ(num_batches(8, 4, false), 2);
  EXPECT_THROW(split_batches(idx, 0, false), UserError);
}

}  // namespace
}  // namespace sb
