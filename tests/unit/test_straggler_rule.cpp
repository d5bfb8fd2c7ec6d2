// The straggler naming rule (train/run/straggler.h) on made-up arrivals: a rank that is late at almost
// every step by well over the jitter is named with its cause; a last rank that changes from step to step,
// or a steady lateness within the jitter, names none.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "train/run/straggler.h"

namespace sb {
namespace {

// [rank][step] samples: compute + input = arrival; `late(r, s)` adds to rank r's compute at step s.
template <typename Late>
std::vector<StepArrival> arrivals(int ranks, int steps, double compute_s, double input_s, Late late) {
  std::vector<StepArrival> out;
  for (int r = 0; r < ranks; ++r) {
    for (int s = 0; s < steps; ++s) {
      const double jitter = 1e-4 * ((s * 7 + r * 3) % 5);  // 0..0.4 ms, different on each rank
      const double compute = compute_s + jitter + late(r, s);
      out.push_back(StepArrival{compute + input_s, input_s, compute, 0.002});
    }
  }
  return out;
}

const std::vector<std::string> kHosts{"node-a", "node-b", "node-c", "node-d"};

TEST(StragglerRule, ARankSlowAtEveryStepIsNamedWithComputeAsItsCause) {
  const auto samples = arrivals(2, 20, 0.030, 0.001, [](int r, int) { return r == 1 ? 0.030 : 0.0; });
  const EpochArrivals a = summarize_arrivals(samples, 2, kHosts);
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_EQ(a.straggler.rank, 1);
  EXPECT_EQ(a.straggler.cause, StragglerCause::compute);
  EXPECT_DOUBLE_EQ(a.straggler.last_share, 1.0);
  EXPECT_NEAR(a.straggler.excess_s, 0.030, 5e-4);
  EXPECT_EQ(a.ranks[1].steps_last, 20);
  EXPECT_EQ(a.ranks[0].steps_last, 0);
  EXPECT_NEAR(a.straggler.compute_s - a.straggler.median_compute_s, 0.030, 5e-4);
  const std::string line = straggler_line(a, 0);
  EXPECT_NE(line.find("straggler: rank 1 (host node-b) arrived last in 100%"), std::string::npos) << line;
  EXPECT_NE(line.find("(compute is the cause)"), std::string::npos) << line;
}

TEST(StragglerRule, ARankWaitingForItsInputIsNamedWithInputAsItsCause) {
  std::vector<StepArrival> samples = arrivals(4, 10, 0.020, 0.001, [](int, int) { return 0.0; });
  for (int s = 0; s < 10; ++s) {  // rank 2 waits 15 ms longer for each batch
    StepArrival& x = samples[static_cast<size_t>(2 * 10 + s)];
    x.input_s += 0.015;
    x.arrival_s += 0.015;
  }
  const EpochArrivals a = summarize_arrivals(samples, 4, kHosts);
  EXPECT_EQ(a.straggler.rank, 2);
  EXPECT_EQ(a.straggler.cause, StragglerCause::input);
  EXPECT_NE(straggler_line(a, 2).find("(input is the cause)"), std::string::npos);
}

TEST(StragglerRule, ALastRankThatChangesFromStepToStepIsNotNamed) {
  // Each rank is late by 5 ms at every other step: each arrives last in half the steps.
  const auto samples = arrivals(2, 20, 0.030, 0.001, [](int r, int s) { return (s + r) % 2 == 0 ? 0.005 : 0.0; });
  const EpochArrivals a = summarize_arrivals(samples, 2, kHosts);
  EXPECT_EQ(a.straggler.rank, -1);
  EXPECT_GE(a.straggler.candidate, 0);
  EXPECT_LE(a.straggler.last_share, 0.5);
  EXPECT_NE(straggler_line(a, 0).find("straggler: none stands out"), std::string::npos) << straggler_line(a, 0);
}

TEST(StragglerRule, AlwaysLastButWithinTheThresholdIsNotNamed) {
  // 1 ms late at every step of 30 ms: last every time, but below a tenth of the arrival.
  const auto samples = arrivals(2, 20, 0.030, 0.001, [](int r, int) { return r == 0 ? 0.001 : 0.0; });
  const EpochArrivals a = summarize_arrivals(samples, 2, kHosts);
  EXPECT_EQ(a.straggler.candidate, 0);
  EXPECT_DOUBLE_EQ(a.straggler.last_share, 1.0);
  EXPECT_EQ(a.straggler.rank, -1);
  EXPECT_GT(a.straggler.threshold_s, a.straggler.excess_s);
}

TEST(StragglerRule, LatenessWithinTheJitterIsNotNamed) {
  // Arrivals that swing by 20 ms from step to step on every rank: rank 1's steady 4 ms is within them.
  auto samples = arrivals(2, 20, 0.030, 0.001, [](int r, int s) { return (s % 2 ? 0.020 : 0.0) + (r == 1 ? 0.004 : 0.0); });
  const EpochArrivals a = summarize_arrivals(samples, 2, kHosts);
  EXPECT_EQ(a.straggler.candidate, 1);
  EXPECT_GT(a.straggler.jitter_s, 0.005);
  EXPECT_EQ(a.straggler.rank, -1);
}

TEST(StragglerRule, OneRankOrTooFewStepsGiveNoVerdict) {
  const EpochArrivals one = summarize_arrivals(arrivals(1, 10, 0.03, 0.0, [](int, int) { return 0.0; }), 1, kHosts);
  EXPECT_EQ(one.straggler.candidate, -1);
  EXPECT_EQ(straggler_line(one, 0), "straggler: none (one rank)");
  const EpochArrivals two_steps = summarize_arrivals(arrivals(2, 2, 0.03, 0.0, [](int r, int) { return r * 0.03; }), 2, kHosts);
  EXPECT_EQ(two_steps.straggler.candidate, -1);
  EXPECT_EQ(two_steps.straggler.rank, -1);
  const EpochArrivals none = summarize_arrivals({}, 2, kHosts);
  EXPECT_FALSE(none.measured());
  EXPECT_NE(straggler_line(none, 0).find("not measured"), std::string::npos);
}

}  // namespace
}  // namespace sb
