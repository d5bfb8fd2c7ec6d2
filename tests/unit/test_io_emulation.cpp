// scalebench io --emulate-gpus: the option's list, the ranks' shares of a node's emulated GPUs, the
// accelerator utilisation, the limiting stage, the workers a rate needs, the largest count at the bar,
// a train run's rate per GPU and a count's summary over the ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "data/emulation_summary.h"
#include "data/gpu_emulation.h"
#include "user_error_text.h"

namespace sb {
namespace {

using testing::refusal;

TEST(IoEmulationOptions, ACountListReadsAscendingCounts) {
  EXPECT_EQ(parse_emulated_gpus("1,2,4,8"), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(parse_emulated_gpus("3"), (std::vector<int>{3}));
}

TEST(IoEmulationOptions, ZeroNegativeTextAndEmptyItemsAreRefusedNamingTheOption) {
  for (const char* bad : {"0", "1,0", "-2", "two", "", "1,,2", "1,2x", "5000"}) {
    const std::string why = refusal([&] { parse_emulated_gpus(bad); });
    EXPECT_NE(why.find("--emulate-gpus '" + std::string(bad) + "'"), std::string::npos) << bad << ": " << why;
    EXPECT_NE(why.find("e.g. 1,2,4,8"), std::string::npos) << why;
  }
}

TEST(IoEmulationOptions, RepeatedOrDescendingCountsAreRefused) {
  EXPECT_NE(refusal([] { parse_emulated_gpus("4,2"); }).find("ascending"), std::string::npos);
  EXPECT_NE(refusal([] { parse_emulated_gpus("2,2"); }).find("ascending"), std::string::npos);
}

TEST(IoEmulationShares, ANodesGpusAreSharedEvenlyTheFirstRanksTakingTheRest) {
  EXPECT_EQ(emulated_gpus_of_rank(8, 0, 2), 4);
  EXPECT_EQ(emulated_gpus_of_rank(8, 1, 2), 4);
  EXPECT_EQ(emulated_gpus_of_rank(3, 0, 2), 2);
  EXPECT_EQ(emulated_gpus_of_rank(3, 1, 2), 1);
  EXPECT_EQ(emulated_gpus_of_rank(1, 0, 4), 1);
  EXPECT_EQ(emulated_gpus_of_rank(1, 3, 4), 0);
  for (int per_node : {1, 2, 5, 8, 13}) {
    int sum = 0;
    for (int r = 0; r < 4; ++r) sum += emulated_gpus_of_rank(per_node, r, 4);
    EXPECT_EQ(sum, per_node);
  }
}

TEST(IoEmulationArithmetic, UtilisationIsComputeOverWall) {
  EXPECT_DOUBLE_EQ(accelerator_utilisation(9, 10), 0.9);
  EXPECT_DOUBLE_EQ(accelerator_utilisation(1, 0), 0);
}

TEST(IoEmulationArithmetic, TheStageThatTookLongestLimitsWithDecodeCountingTheWorkersCropToo) {
  InputTotals t;
  t.read_seconds = 3;
  t.decode_seconds = 2;
  t.augment_seconds = 2;
  EXPECT_EQ(limiting_stage(t), InputStage::Decode);
  t.read_seconds = 5;
  EXPECT_EQ(limiting_stage(t), InputStage::Read);
  t.copy_seconds = 9;
  EXPECT_EQ(limiting_stage(t), InputStage::Copy);
  EXPECT_STREQ(stage_name(InputStage::Decode), "decode");
}

TEST(IoEmulationArithmetic, WorkersNeededFollowTheBusySecondsPerImage) {
  InputTotals t;
  t.read_seconds = 0.1;
  t.decode_seconds = 0.7;
  t.augment_seconds = 0.2;
  t.images = 1000;  // 1 ms per image: 1000 img/s a worker
  EXPECT_EQ(workers_needed(6000, t), 6);
  EXPECT_EQ(workers_needed(6001, t), 7);
  EXPECT_EQ(workers_needed(10, t), 1);
  EXPECT_EQ(workers_needed(10, InputTotals{}), 0);
  EXPECT_DOUBLE_EQ(images_per_worker_second(t), 1000);
  EXPECT_DOUBLE_EQ(images_per_worker_second(InputTotals{}), 0);
}

TEST(IoEmulationArithmetic, WithNoBusyTimeCountedOneWorkerKeptUp) {
  InputTotals t;
  t.images = 10;
  EXPECT_DOUBLE_EQ(images_per_worker_second(t), 0);
  EXPECT_EQ(workers_needed(5000, t), 1);
}

TEST(IoEmulationArithmetic, TheLargestCountAtTheBarIsFoundOrNone) {
  EXPECT_EQ(largest_count_meeting({{1, 0.99}, {2, 0.95}, {4, 0.6}}), 2);
  EXPECT_EQ(largest_count_meeting({{1, 0.9}, {2, 0.89}}), 1);
  EXPECT_EQ(largest_count_meeting({{1, 0.5}, {2, 0.3}}), 0);
}

TEST(IoEmulationArithmetic, ARunsRateIsTheMedianOfItsSteadyWholeEpochsPerGpu) {
  // The first epoch settles; the third is a resumed part; the median of 400, 600, 500 over 2 GPUs.
  EXPECT_DOUBLE_EQ(steady_rate_per_gpu({100, 400, 9000, 600, 500}, {0, 0, 7, 0, 0}, 1, 2), 250);
  EXPECT_DOUBLE_EQ(steady_rate_per_gpu({100}, {0}, 1, 1), 100);  // one epoch: the last counts
  EXPECT_TRUE(std::isnan(steady_rate_per_gpu({}, {}, 1, 1)));
  EXPECT_TRUE(std::isnan(steady_rate_per_gpu({NAN}, {0}, 1, 1)));
}

RankEmulation rank_run(int gpus, double compute_s, double wall_s, int64_t bytes, int64_t files) {
  RankEmulation r;
  r.gpus = gpus;
  r.run.compute_s = compute_s;
  r.run.wall_s = wall_s;
  r.run.images = files;
  r.run.totals.bytes = bytes;
  r.run.totals.images = files;
  r.run.totals.decode_seconds = 1;
  return r;
}

TEST(IoEmulationSummary, TheSlowestRankSetsTheUtilisationAndTheRatesAreOverItsWallTime) {
  const CountSummary s =
      summarize_count(3, {rank_run(2, 9, 10, 1000, 40), rank_run(1, 9.5, 9.5, 3000, 60), rank_run(0, 0, 0, 0, 0)}, 2);
  EXPECT_EQ(s.gpus, 3);
  EXPECT_EQ(s.most_gpus_of_a_rank, 2);
  EXPECT_DOUBLE_EQ(s.utilisation, 0.9);
  EXPECT_DOUBLE_EQ(s.bytes_per_s, 400);
  EXPECT_DOUBLE_EQ(s.files_per_s, 10);
  EXPECT_DOUBLE_EQ(s.bytes_per_s_per_node, 200);
  EXPECT_DOUBLE_EQ(s.files_per_s_per_node, 5);
  EXPECT_STREQ(limit_name(s), "compute");
}

TEST(IoEmulationSummary, BelowTheBarTheLimitIsTheLongestStage) {
  const CountSummary s = summarize_count(1, {rank_run(1, 2, 10, 100, 10)}, 1);
  EXPECT_DOUBLE_EQ(s.utilisation, 0.2);
  EXPECT_STREQ(limit_name(s), "decode");
}

TEST(IoEmulationSummary, EachNodeIsSummedAloneAndTheJobTakesTheLowestNodesUtilisation) {
  // Ranks 0 and 2 on node a (AU 0.95 and 0.9), rank 1 on node b (AU 0.5).
  const JobSummary s = summarize_job(2, {rank_run(1, 9.5, 10, 100, 10), rank_run(2, 5, 10, 400, 40), rank_run(1, 9, 10, 100, 10)},
                                     {"a", "b", "a"});
  ASSERT_EQ(s.nodes.size(), 2u);
  EXPECT_EQ(s.nodes[0].host, "a");
  EXPECT_EQ(s.nodes[1].host, "b");
  EXPECT_DOUBLE_EQ(s.nodes[0].count.utilisation, 0.9);
  EXPECT_EQ(s.nodes[0].count.gpus, 2);
  EXPECT_DOUBLE_EQ(s.nodes[0].count.bytes_per_s, 20);
  EXPECT_DOUBLE_EQ(s.nodes[0].count.bytes_per_s_per_node, 20);
  EXPECT_STREQ(limit_name(s.nodes[0].count), "compute");
  EXPECT_DOUBLE_EQ(s.nodes[1].count.utilisation, 0.5);
  EXPECT_STREQ(limit_name(s.nodes[1].count), "decode");
  EXPECT_DOUBLE_EQ(s.job.utilisation, 0.5);
  EXPECT_EQ(s.job.gpus, 4);
  EXPECT_DOUBLE_EQ(s.job.bytes_per_s, 60);
  EXPECT_DOUBLE_EQ(s.job.bytes_per_s_per_node, 30);
}

TEST(IoEmulationSummary, ACountMeetsTheBarOnlyWhereEveryNodeMetIt) {
  std::vector<EmulatedCount> counts;
  for (double slow_node_au : {0.95, 0.92, 0.7}) {
    const JobSummary s = summarize_job(static_cast<int>(counts.size()) + 1,
                                       {rank_run(1, 9.9, 10, 1, 1), rank_run(1, 10 * slow_node_au, 10, 1, 1)}, {"a", "b"});
    counts.push_back(EmulatedCount{s.job.gpus_per_node, s.job.utilisation});
  }
  EXPECT_EQ(largest_count_meeting(counts), 2);
}

}  // namespace
}  // namespace sb
