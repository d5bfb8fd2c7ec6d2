// A study's medians (train/study/study_medians.h): the median of each combination and GPU count over the steady
// epochs of all its repeats, and the medians' speedup and efficiency against the smallest count of the same
// combination; what those figures cannot say (train/study/study_problems.h).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "train/study/study_medians.h"
#include "train/study/study_problems.h"

namespace sb {
namespace {

StudyPoint point(size_t combination, int repeat, int gpus, double images_per_s, double epoch_time_s) {
  StudyPoint p;
  p.plan = StudyRunPlan{combination, repeat, gpus};
  p.gpus = gpus;
  p.images_per_s = images_per_s;
  p.epoch_time_s = epoch_time_s;
  return p;
}

TEST(StudyMedians, WeakScalingComparesTheMediansOfTheRepeats) {
  // Three repeats in the order a study runs them; the first 1-GPU run is the fast one.
  const std::vector<StudyPoint> points{point(0, 1, 1, 360, 1), point(0, 1, 4, 1150, 1), point(0, 2, 1, 330, 1),
                                       point(0, 2, 4, 1120, 1), point(0, 3, 1, 340, 1), point(0, 3, 4, 1140, 1)};
  const std::vector<StudyMedian> rows = study_medians(points);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].gpus, 1);
  EXPECT_EQ(rows[0].repeats, 3);
  EXPECT_DOUBLE_EQ(rows[0].images_per_s, 340);
  EXPECT_DOUBLE_EQ(rows[0].min_images_per_s, 330);
  EXPECT_DOUBLE_EQ(rows[0].max_images_per_s, 360);
  EXPECT_DOUBLE_EQ(rows[1].images_per_s, 1140);
  EXPECT_DOUBLE_EQ(rows[1].speedup, 1140.0 / 340.0);
  EXPECT_DOUBLE_EQ(rows[1].efficiency, 1140.0 / (4 * 340.0));
  EXPECT_DOUBLE_EQ(epoch_spread(rows[0]), 30.0 / 340.0);
  EXPECT_TRUE(rows[0].baseline);
  EXPECT_FALSE(rows[1].baseline);
}

TEST(StudyMedians, TwoRepeatsTakeTheMeanOfTheMiddlePair) {
  const std::vector<StudyPoint> points{point(0, 1, 1, 100, 2.0), point(0, 2, 1, 110, 1.0)};
  const std::vector<StudyMedian> rows = study_medians(points);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].images_per_s, 105);
  EXPECT_DOUBLE_EQ(rows[0].epoch_time_s, 1.5);
  EXPECT_DOUBLE_EQ(rows[0].efficiency, 1.0);
}

TEST(StudyMedians, SpeedupComparesThroughputsWithinEachCombination) {
  // Combination 1's baseline is its own smallest count (2 GPUs), not combination 0's.
  const std::vector<StudyPoint> points{point(0, 1, 1, 100, 8.0), point(0, 1, 2, 180, 5.0), point(1, 1, 2, 300, 4.0),
                                       point(1, 1, 4, 480, 2.5), point(0, 2, 1, 100, 8.0), point(0, 2, 2, 190, 4.0),
                                       point(1, 2, 2, 300, 4.0), point(1, 2, 4, 480, 2.5)};
  const std::vector<StudyMedian> rows = study_medians(points);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[1].combination, 0u);
  EXPECT_EQ(rows[1].gpus, 2);
  EXPECT_DOUBLE_EQ(rows[1].epoch_time_s, 4.5);
  EXPECT_DOUBLE_EQ(rows[1].speedup, 185.0 / 100.0);
  EXPECT_DOUBLE_EQ(rows[1].efficiency, 185.0 / 100.0 / 2);
  EXPECT_EQ(rows[3].combination, 1u);
  EXPECT_EQ(rows[3].gpus, 4);
  EXPECT_DOUBLE_EQ(rows[3].speedup, 1.6);
  EXPECT_DOUBLE_EQ(rows[3].efficiency, 0.8);
  EXPECT_DOUBLE_EQ(rows[2].efficiency, 1.0);
  EXPECT_TRUE(rows[0].baseline);
  EXPECT_FALSE(rows[1].baseline);
  EXPECT_TRUE(rows[2].baseline) << "combination 1's smallest count";
  EXPECT_FALSE(rows[3].baseline);
}

TEST(StudyMedians, EverySteadyEpochOfEveryRepeatCountsOnce) {
  std::vector<StudyPoint> points{point(0, 1, 1, 0, 0), point(0, 1, 2, 0, 0), point(0, 2, 1, 0, 0), point(0, 2, 2, 0, 0)};
  points[0].steady_images_per_s = {100, 104, 96};
  points[2].steady_images_per_s = {90, 110};
  points[1].steady_images_per_s = {190, 200, 170};
  points[3].steady_images_per_s = {180};
  for (StudyPoint& p : points) p.steady_epoch_times_s = std::vector<double>(p.steady_images_per_s.size(), 1.0);
  const std::vector<StudyMedian> rows = study_medians(points);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].steady_epochs, 5);
  EXPECT_EQ(rows[0].repeats, 2);
  EXPECT_DOUBLE_EQ(rows[0].images_per_s, 100);  // of 90, 96, 100, 104, 110
  EXPECT_DOUBLE_EQ(rows[0].min_images_per_s, 90);
  EXPECT_DOUBLE_EQ(rows[0].max_images_per_s, 110);
  EXPECT_DOUBLE_EQ(rows[1].images_per_s, 185);  // of 170, 180, 190, 200
  EXPECT_DOUBLE_EQ(rows[1].efficiency, 0.925);
  EXPECT_DOUBLE_EQ(rows[1].min_efficiency, 170.0 / 200);
  EXPECT_DOUBLE_EQ(rows[1].max_efficiency, 1.0);
  EXPECT_TRUE(study_problems(rows, "GPU").empty());
}

TEST(StudyProblems, ABaselineOfOneSteadyEpochIsNoResult) {
  std::vector<StudyPoint> points{point(0, 1, 1, 100, 1), point(0, 1, 2, 190, 1)};
  const std::vector<StudyMedian> rows = study_medians(points);
  const std::vector<StudyProblem> problems = study_problems(rows, "rank");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].text.find("the 1-rank baseline has one steady epoch"), std::string::npos) << problems[0].text;
  EXPECT_NE(problems[0].text.find("--epochs 3 or more"), std::string::npos) << problems[0].text;
  EXPECT_TRUE(has_problem(rows[1], problems));
  EXPECT_FALSE(has_problem(rows[0], problems)) << "the baseline's own 100% is no claim";
}

TEST(StudyProblems, EfficiencyAbove100PercentBeyondItsRangeIsAMeasurementProblem) {
  std::vector<StudyPoint> points{point(0, 1, 1, 0, 0), point(0, 1, 2, 0, 0), point(0, 1, 4, 0, 0)};
  points[0].steady_images_per_s = {100, 100, 100};
  points[1].steady_images_per_s = {195, 205, 210};  // 97.5-105%: 100% lies within the range
  points[2].steady_images_per_s = {3000, 3100, 3200};
  for (StudyPoint& p : points) p.steady_epoch_times_s = {0.01, 0.01, 0.01};
  const std::vector<StudyMedian> rows = study_medians(points);
  const std::vector<StudyProblem> problems = study_problems(rows, "GPU");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].gpus, 4);
  EXPECT_NE(problems[0].text.find("775.0%"), std::string::npos) << problems[0].text;
  EXPECT_NE(problems[0].text.find("too short for the timer"), std::string::npos) << problems[0].text;
  EXPECT_FALSE(has_problem(rows[1], problems));
  EXPECT_TRUE(has_problem(rows[2], problems));
}

TEST(StudyMedians, OneRepeatHasNoSpread) {
  const std::vector<StudyMedian> rows = study_medians({point(0, 1, 1, 100, 1)});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(epoch_spread(rows[0]), 0.0);
  EXPECT_TRUE(study_medians({}).empty());
}

TEST(StudyMedians, SlowestClockIsTheMedianOfTheRepeatsThatMeasuredIt) {
  std::vector<StudyPoint> points{point(0, 1, 1, 100, 1), point(0, 1, 2, 190, 1), point(0, 2, 1, 101, 1),
                                 point(0, 2, 2, 191, 1), point(0, 3, 1, 99, 1), point(0, 3, 2, 189, 1)};
  points[0].sm_clock_min_mhz = 1720;
  points[2].sm_clock_min_mhz = 1700;
  points[4].sm_clock_min_mhz = 1730;
  points[1].sm_clock_min_mhz = 1640;  // the 2-GPU runs: one repeat without a clock (no NVML on a rank)
  points[5].sm_clock_min_mhz = 1620;
  const std::vector<StudyMedian> rows = study_medians(points);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].sm_clock_min_mhz, 1720);
  EXPECT_DOUBLE_EQ(rows[1].sm_clock_min_mhz, 1630) << "the mean of the middle pair of the two that measured it";

  const std::vector<StudyMedian> unclocked = study_medians({point(0, 1, 1, 100, 1)});
  EXPECT_TRUE(std::isnan(unclocked[0].sm_clock_min_mhz));
}

}  // namespace
}  // namespace sb
