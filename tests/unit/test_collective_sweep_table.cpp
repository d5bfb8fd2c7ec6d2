// The table of collectives of the `comm` sweep: nccl-tests' bus-bandwidth factors and byte counts, the
// names of --collectives, the points each collective sweeps, and the expected-value check of each,
// against results worked out here from the collective's definition.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "comm/allreduce_sweep.h"
#include "comm/collective.h"
#include "core/error.h"

namespace sb {
namespace {

const Collective* const kEvery[] = {&kAllReduce, &kReduceScatter, &kAllGather, &kBroadcast};

TEST(CollectiveTable, NamesAndCodesInOrder) {
  EXPECT_EQ(collective_names(), (std::vector<std::string>{"all-reduce", "reduce-scatter", "all-gather", "broadcast"}));
  for (const Collective* c : kEvery) {
    EXPECT_EQ(&collective_of(c->kind), c);
    EXPECT_EQ(collective_names().at(static_cast<size_t>(c->kind)), c->name);
  }
  EXPECT_STREQ(kAllReduce.redop, "sum");
  EXPECT_STREQ(kReduceScatter.redop, "sum");
  EXPECT_STREQ(kAllGather.redop, "none");
  EXPECT_EQ(kBroadcast.root, 0);
  EXPECT_EQ(kAllReduce.root, -1);
}

TEST(CollectiveTable, ParsesTheOptionAndRefusesBadNames) {
  EXPECT_EQ(parse_collectives({"broadcast", "all-reduce"}),
            (std::vector<CollectiveKind>{CollectiveKind::Broadcast, CollectiveKind::AllReduce}));
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"allreduce"},
                                              std::vector<std::string>{"all-gather", "all-gather"},
                                              std::vector<std::string>{}}) {
    try {
      parse_collectives(bad);
      FAIL() << "accepted a bad --collectives";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("--collectives"), std::string::npos) << e.what();
    }
  }
}

// nccl-tests' doc/PERFORMANCE.md: all-reduce 2(n-1)/n, reduce-scatter and all-gather (n-1)/n, broadcast 1.
TEST(CollectiveTable, BusBandwidthFactors) {
  for (int n : {1, 2, 4, 8}) {
    EXPECT_DOUBLE_EQ(kAllReduce.busbw_factor(n), 2.0 * (n - 1) / n);
    EXPECT_DOUBLE_EQ(kReduceScatter.busbw_factor(n), static_cast<double>(n - 1) / n);
    EXPECT_DOUBLE_EQ(kAllGather.busbw_factor(n), static_cast<double>(n - 1) / n);
    EXPECT_DOUBLE_EQ(kBroadcast.busbw_factor(n), 1.0);
  }
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(4), 1.5);
}

// The whole array of `count` elements: what each rank sends and receives, and the count of the call.
TEST(CollectiveTable, ByteCountsAsNcclTestsCountsThem) {
  struct Case { const Collective* c; int64_t usable, per_rank, send, receive; };
  for (const Case& k : {Case{&kAllReduce, 1001, 1001, 1001, 1001}, Case{&kReduceScatter, 1000, 250, 1000, 250},
                        Case{&kAllGather, 1000, 250, 250, 1000}, Case{&kBroadcast, 1001, 1001, 1001, 1001}}) {
    SCOPED_TRACE(k.c->name);
    const int64_t usable = k.c->usable_count(1001, 4);
    EXPECT_EQ(usable, k.usable);
    EXPECT_EQ(k.c->per_rank_count(usable, 4), k.per_rank);
    EXPECT_EQ(k.c->send_count(usable, 4), k.send);
    EXPECT_EQ(k.c->receive_count(usable, 4), k.receive);
  }
  EXPECT_EQ(kReduceScatter.usable_count(3, 4), 0);  // fewer elements than ranks: nothing to split
  EXPECT_EQ(kAllGather.in_place_input_offset(3, 250), 750);
  EXPECT_EQ(kReduceScatter.in_place_result_offset(3, 250, /*mpi=*/false), 750);
  EXPECT_EQ(kReduceScatter.in_place_result_offset(3, 250, /*mpi=*/true), 0);
}

TEST(CollectiveTable, SplitCollectivesSweepWholeBlocksPerRank) {
  // fp32 on 3 ranks: 4, 8, 16, 32 bytes hold 1, 2, 4, 8 elements, of which 0, 0, 3, 6 split evenly; the
  // model's 10 elements become 9, slotted in after 6.
  const std::vector<SweepPoint> points = sweep_points(kReduceScatter, 3, {4, 8, 16, 32}, {SweepDtype::Fp32}, 10);
  std::vector<int64_t> bytes;
  for (const SweepPoint& p : points) {
    bytes.push_back(p.bytes());
    EXPECT_EQ(p.collective, CollectiveKind::ReduceScatter);
  }
  EXPECT_EQ(bytes, (std::vector<int64_t>{12, 24, 36}));
  EXPECT_TRUE(points[2].is_model_size);
  // The all-reduce and the broadcast keep every size.
  EXPECT_EQ(sweep_points(kBroadcast, 3, {4, 8, 16, 32}, {SweepDtype::Fp32}, 0).size(), 4u);
}

// Rank `rank`'s result worked out from each collective's definition, for inputs value(r, j).
std::vector<float> defined_result(const Collective& c, const CheckPattern& pattern, int rank, int ranks, int64_t count) {
  const int64_t per_rank = c.per_rank_count(count, ranks);
  std::vector<float> out;
  for (int64_t j = 0; j < c.receive_count(count, ranks); ++j) {
    double x = 0;
    switch (c.kind) {
      case CollectiveKind::AllReduce:
        for (int r = 0; r < ranks; ++r) x += pattern.value(r, j);
        break;
      case CollectiveKind::ReduceScatter:
        for (int r = 0; r < ranks; ++r) x += pattern.value(r, rank * per_rank + j);
        break;
      case CollectiveKind::AllGather: x = pattern.value(static_cast<int>(j / per_rank), j % per_rank); break;
      case CollectiveKind::Broadcast: x = pattern.value(0, j); break;
    }
    out.push_back(static_cast<float>(x));
  }
  return out;
}

TEST(CollectiveCheck, PassesTheRightResultAndCountsWrongElements) {
  const auto as_double = [](float x) { return static_cast<double>(x); };
  for (const Collective* c : kEvery) {
    for (int ranks : {1, 2, 3, 4}) {
      const CheckPattern pattern(SweepDtype::Fp32, ranks);
      const int64_t count = c->usable_count(1003, ranks);
      for (int rank = 0; rank < ranks; ++rank) {
        SCOPED_TRACE(std::string(c->name) + " rank " + std::to_string(rank) + " of " + std::to_string(ranks));
        const int64_t per_rank = c->per_rank_count(count, ranks);
        std::vector<float> result = defined_result(*c, pattern, rank, ranks, count);
        EXPECT_EQ(count_wrong(*c, pattern, rank, per_rank, std::span<const float>(result), as_double), 0);
        result[result.size() / 2] += 1;  // one element off
        EXPECT_EQ(count_wrong(*c, pattern, rank, per_rank, std::span<const float>(result), as_double), 1);
        // A result never written is wrong everywhere.
        const std::vector<float> unwritten(result.size(), static_cast<float>(CheckPattern::kUnwritten));
        EXPECT_EQ(count_wrong(*c, pattern, rank, per_rank, std::span<const float>(unwritten), as_double),
                  static_cast<int64_t>(result.size()));
      }
    }
  }
}

}  // namespace
}  // namespace sb
