// The timed progress line (--log-seconds): its schedule on a fake clock, and its text.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <regex>

#include "train/reporting/progress_line.h"

namespace sb {
namespace {

TEST(ProgressSchedule, NoLineComesSoonerThanItsInterval) {
  ProgressSchedule every2(2.0);
  std::vector<double> printed;
  for (double t = 0; t <= 10.0; t += 0.25)  // a step every quarter second
    if (every2.due(t)) printed.push_back(t);
  EXPECT_EQ(printed, (std::vector<double>{2, 4, 6, 8, 10}));

  ProgressSchedule uneven(1.0);  // steps of 0.75 s: a line after each step that passes the interval
  printed.clear();
  for (double t = 0.75; t <= 6.0; t += 0.75)
    if (uneven.due(t)) printed.push_back(t);
  EXPECT_EQ(printed, (std::vector<double>{1.5, 3.0, 4.5, 6.0}));
  for (size_t i = 1; i < printed.size(); ++i) EXPECT_GE(printed[i] - printed[i - 1], 1.0);

  uneven.restart();  // a new epoch counts from its own start
  EXPECT_FALSE(uneven.due(0.5));
  EXPECT_TRUE(uneven.due(1.0));
}

TEST(ProgressSchedule, ZeroTurnsTheLinesOff) {
  ProgressSchedule off(0);
  for (double t = 0; t < 100; t += 1) EXPECT_FALSE(off.due(t));
}

TEST(ProgressLine, ShowsTimeEpochStepRatesLossAndEtas) {
  ProgressPoint p;
  p.epoch = 1;            // the second of
  p.epochs = 4;
  p.step = 50;            // of 200 steps, 40 of them timed here (a resume began at step 10)
  p.steps = 200;
  p.steps_timed = 40;
  p.epoch_seconds = 20;   // 0.5 s per step
  p.images = 40 * 256;    // 512 img/s over all ranks
  p.ranks = 4;
  p.rank_unit = "GPU";
  p.loss = 0.123456;
  p.eval_seconds = 5;
  const auto at = std::chrono::system_clock::time_point(std::chrono::milliseconds(1764175803125));  // 2025-11-26T16:50:03.125Z
  const std::string line = progress_line(p, at);
  // Epoch: 150 steps left at 0.5 s = 75 s. Run: 75 + 5 (this evaluation) + 2 epochs x (100 + 5) = 290 s.
  EXPECT_EQ(line,
            "2025-11-26T16:50:03.125Z epoch 2/4 step 50/200 | 512 img/s, 128 per GPU | loss 0.1235 | "
            "ETA epoch 00:01:15, run 00:04:50");
  EXPECT_EQ(line.find_first_of("\r\n"), std::string::npos);
}

TEST(ProgressLine, UnknownFiguresReadNA) {
  ProgressPoint p;
  p.loss = NAN;
  const std::string line = progress_line(p, std::chrono::system_clock::time_point{});
  EXPECT_NE(line.find("loss n/a"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA epoch n/a, run n/a"), std::string::npos) << line;  // no step timed yet
  EXPECT_EQ(line.rfind("1970-01-01T00:00:00.000Z epoch 1/1 step 0/1", 0), 0u) << line;
}

TEST(ProgressLine, DurationsAndThousands) {
  EXPECT_EQ(clock_duration(0), "00:00:00");
  EXPECT_EQ(clock_duration(3599.6), "01:00:00");
  EXPECT_EQ(clock_duration(100 * 3600 + 61), "100:01:01");
  EXPECT_EQ(clock_duration(-1), "n/a");
  EXPECT_EQ(clock_duration(INFINITY), "n/a");
  EXPECT_EQ(with_thousands(1234567.4), "1,234,567");
  EXPECT_EQ(with_thousands(999), "999");
  EXPECT_EQ(with_thousands(NAN), "n/a");
}

}  // namespace
}  // namespace sb
