// The model FLOP rate and MFU of the train summary.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "metrics/flops_rate.h"

namespace sb {
namespace {

TEST(FlopsRate, AchievedRateIsFlopsPerSampleTimesThroughput) {
  // 0.072 GFLOP per sample at 100,000 img/s is 7.2 TFLOP/s, over two devices of 50 TFLOP/s: 7.2%.
  const FlopsRate rate = flops_rate(0.072e9, 100000.0, 50.0, 2);
  EXPECT_DOUBLE_EQ(rate.achieved_tflops, 7.2);
  EXPECT_DOUBLE_EQ(rate.mfu, 0.072);
}

TEST(FlopsRate, UnknownPeakGivesNoUtilisation) {
  const FlopsRate rate = flops_rate(1e9, 1000.0, std::numeric_limits<double>::quiet_NaN(), 4);
  EXPECT_DOUBLE_EQ(rate.achieved_tflops, 1.0);
  EXPECT_TRUE(std::isnan(rate.mfu));
  EXPECT_TRUE(std::isnan(flops_rate(1e9, 1000.0, 0.0, 4).mfu));
}

}  // namespace
}  // namespace sb
