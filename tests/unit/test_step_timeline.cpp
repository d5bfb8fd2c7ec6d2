// The split of a step into phases from its device timeline (compute- and communication-stream events),
// the buckets' ready-time medians, and the trace of a step at its real times.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <numeric>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "metrics/bucket_ready_samples.h"
#include "metrics/step_timeline.h"
#include "metrics/step_trace.h"
#include "scratch_dir.h"

namespace sb {
namespace {

// A step of 10 ms: data to 1, forward to 3, backward to 7, the wait for the all-reduce to 8, the update to 10.
StepTimeline step_with(std::vector<BucketSpan> buckets, double comm_end = 8e-3) {
  StepTimeline t;
  t.ends = {1e-3, 3e-3, 7e-3, comm_end, comm_end + 2e-3};
  t.buckets = std::move(buckets);
  set_bucket_starts(t.buckets);
  return t;
}

BucketSpan bucket(double ready, double end, int64_t bytes = 4096) { return BucketSpan{ready, 0, end, bytes}; }

double sum(const std::array<double, kPhaseCount>& s) { return std::accumulate(s.begin(), s.end(), 0.0); }

TEST(StepTimeline, TheArrivalIsTheLastBucketReady) {
  // The rank reaches its last collective when its last bucket is ready, whatever the order of launch.
  EXPECT_DOUBLE_EQ(arrival_seconds(step_with({bucket(4e-3, 5e-3), bucket(6.5e-3, 7.5e-3), bucket(6e-3, 8e-3)})), 6.5e-3);
  // Nothing to exchange (one rank): the gradients are ready when backward ends.
  EXPECT_DOUBLE_EQ(arrival_seconds(step_with({}, 7e-3)), 7e-3);
}

TEST(StepTimeline, NoCommunicationLeavesAllBackwardAsBackward) {
  const StepTimeline t = step_with({}, 7e-3);
  const auto s = phase_seconds(t);
  EXPECT_DOUBLE_EQ(s[kPhaseBackwardOverlap], 0.0);
  EXPECT_NEAR(s[kPhaseBackward], 4e-3, 1e-15);
  EXPECT_DOUBLE_EQ(s[kPhaseComm], 0.0);
  EXPECT_NEAR(sum(s), t.ends[kOptimizerEnd], 1e-15);
}

TEST(StepTimeline, BucketsThatExchangeNothingOverlapNothing) {
  // One rank: each bucket ends where it is ready.
  const auto s = phase_seconds(step_with({bucket(4e-3, 4e-3, 0), bucket(6e-3, 6e-3, 0)}, 7e-3));
  EXPECT_DOUBLE_EQ(s[kPhaseBackwardOverlap], 0.0);
  EXPECT_NEAR(s[kPhaseBackward], 4e-3, 1e-15);
}

TEST(StepTimeline, CommunicationCoveringBackwardMakesItAllOverlap) {
  // A bucket ready as backward starts keeps the link busy past its end.
  const StepTimeline t = step_with({bucket(3e-3, 7.5e-3)}, 7.5e-3);
  const auto s = phase_seconds(t);
  EXPECT_NEAR(s[kPhaseBackwardOverlap], 4e-3, 1e-15);
  EXPECT_NEAR(s[kPhaseBackward], 0.0, 1e-15);
  EXPECT_NEAR(s[kPhaseComm], 0.5e-3, 1e-15);
  EXPECT_NEAR(sum(s), t.ends[kOptimizerEnd], 1e-15);
}

TEST(StepTimeline, AllReduceAfterBackwardIsExposedCommunication) {
  // The only bucket is ready when backward ends: the compute stream waits 1 ms for it.
  const auto s = phase_seconds(step_with({bucket(7e-3, 8e-3)}));
  EXPECT_DOUBLE_EQ(s[kPhaseBackwardOverlap], 0.0);
  EXPECT_NEAR(s[kPhaseBackward], 4e-3, 1e-15);
  EXPECT_NEAR(s[kPhaseComm], 1e-3, 1e-15);
}

TEST(StepTimeline, SerialBucketsStartWhenTheLinkIsFree) {
  // Bucket 1 is ready at 4.5 ms but the link carries bucket 0 until 5 ms; bucket 2 waits behind 1.
  const StepTimeline t = step_with({bucket(4e-3, 5e-3), bucket(4.5e-3, 6e-3), bucket(6.5e-3, 8e-3)});
  EXPECT_DOUBLE_EQ(t.buckets[0].start_s, 4e-3);
  EXPECT_DOUBLE_EQ(t.buckets[1].start_s, 5e-3);
  EXPECT_DOUBLE_EQ(t.buckets[2].start_s, 6.5e-3);
  const auto s = phase_seconds(t);
  // Busy within backward [3, 7]: [4, 5] + [5, 6] + [6.5, 7] = 2.5 ms.
  EXPECT_NEAR(s[kPhaseBackwardOverlap], 2.5e-3, 1e-15);
  EXPECT_NEAR(s[kPhaseBackward], 1.5e-3, 1e-15);
  EXPECT_NEAR(sum(s), t.ends[kOptimizerEnd], 1e-15);
  EXPECT_EQ(ready_after_backward_start(t), (std::vector<double>{4e-3 - 3e-3, 4.5e-3 - 3e-3, 6.5e-3 - 3e-3}));
}

TEST(BucketReadySamples, MedianPerBucket) {
  BucketReadySamples samples;
  EXPECT_TRUE(samples.medians().empty());
  samples.add(std::vector<double>{});  // a step without buckets adds nothing
  samples.add(std::vector<double>{1.0, 10.0});
  samples.add(std::vector<double>{3.0, 30.0});
  samples.add(std::vector<double>{2.0, 90.0});
  EXPECT_EQ(samples.medians(), (std::vector<double>{2.0, 30.0}));
  samples.add(std::vector<double>{4.0, 40.0});
  EXPECT_EQ(samples.medians(), (std::vector<double>{2.5, 35.0}));  // even count: the middle two's mean
  EXPECT_THROW(samples.add(std::vector<double>{1.0}), std::invalid_argument);
}

class StepTraceTest : public test::ScratchDirTest {};

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_F(StepTraceTest, DeviceStepAtItsRealTimesWithBucketsOnTheirOwnTrack) {
  const std::string path = (dir_ / "trace.json").string();
  {
    ChromeTrace trace(path, 0);
    name_trace_tracks(trace);
    const StepTimeline t = step_with({bucket(4e-3, 5e-3, 1000), bucket(6e-3, 6e-3, 0), bucket(7e-3, 8e-3, 2000)});
    const auto s = phase_seconds(t);
    trace_device_step(trace, t, s.data(), 500.0);
  }
  const std::string text = read_text(path);
  // Phases at the timeline's boundaries after the step's start (500 us).
  EXPECT_NE(text.find(R"("name":"forward","cat":"step","ph":"X","ts":1500.000,"dur":2000.000)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("name":"comm","cat":"step","ph":"X","ts":7500.000,"dur":1000.000)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("backward_overlap_ms":1.000000)"), std::string::npos) << text;
  // Buckets that exchanged bytes, on track 2, at their busy spans.
  EXPECT_NE(text.find(R"("name":"bucket 0","cat":"allreduce","ph":"X","ts":4500.000,"dur":1000.000,"pid":0,"tid":2,"args":{"bytes":1000)"),
            std::string::npos) << text;
  EXPECT_NE(text.find(R"("name":"bucket 2","cat":"allreduce","ph":"X","ts":7500.000,"dur":1000.000)"), std::string::npos) << text;
  EXPECT_EQ(text.find("bucket 1"), std::string::npos) << "a bucket with nothing on the wire is no span";
  EXPECT_NE(text.find(R"x("name":"thread_name","ph":"M","pid":0,"tid":2,"args":{"name":"all-reduce (communication stream)"})x"),
            std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 4), "\n]}\n");
}

TEST_F(StepTraceTest, HostStepsLieEndToEnd) {
  const std::string path = (dir_ / "trace.json").string();
  double cursor = 100.0;
  {
    ChromeTrace trace(path, 1);
    double seconds[kPhaseCount] = {1e-6, 2e-6, 3e-6, 0.0, 4e-6, 5e-6};
    cursor = trace_host_step(trace, seconds, cursor);
  }
  EXPECT_DOUBLE_EQ(cursor, 115.0);
  const std::string text = read_text(path);
  EXPECT_NE(text.find(R"("name":"optimizer","cat":"step","ph":"X","ts":110.000,"dur":5.000)"), std::string::npos) << text;
}

}  // namespace
}  // namespace sb
