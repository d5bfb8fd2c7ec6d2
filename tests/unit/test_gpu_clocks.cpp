// The host side of the GPU clock readings (metrics/gpu_clocks.h, train/run/epoch_clocks.h): the mean of
// samples over a window, the growth of NVML's cumulative violation counters, the limited shares of a
// window, the reduction across ranks on one rank, and the line `train` prints.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "metrics/gpu_clocks.h"
#include "solo_communicator.h"
#include "train/reporting/clocks_line.h"
#include "train/run/epoch_clocks.h"

namespace sb {
namespace {

TEST(ClockSampleMean, MeanOfTheWindowThenANewWindow) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> mhz(300, 2000);
  ClockSampleMean mean;
  EXPECT_TRUE(std::isnan(mean.take())) << "no sample: not measured, never 0";
  std::vector<double> samples(17);
  double sum = 0;
  for (double& s : samples) {
    s = mhz(rng);
    sum += s;
    mean.add(s);
  }
  EXPECT_NEAR(mean.take(), sum / 17.0, 1e-9);
  mean.add(1500);
  EXPECT_DOUBLE_EQ(mean.take(), 1500) << "the earlier window's samples are gone";
  EXPECT_TRUE(std::isnan(mean.take()));
}

TEST(ClockSampleMean, SamplesFromAnotherThreadAllCount) {
  ClockSampleMean mean;
  std::thread sampler([&] {
    for (int i = 0; i < 10000; ++i) mean.add(i % 2 ? 1000.0 : 2000.0);
  });
  sampler.join();
  EXPECT_DOUBLE_EQ(mean.take(), 1500.0);
}

TEST(CounterGrowth, SecondsBetweenReadsAndNaNWhereUnknown) {
  CounterGrowth growth;
  EXPECT_TRUE(std::isnan(growth.take_seconds(5'000'000'000ull))) << "the first read has nothing before it";
  EXPECT_DOUBLE_EQ(growth.take_seconds(5'250'000'000ull), 0.25);
  EXPECT_DOUBLE_EQ(growth.take_seconds(5'250'000'000ull), 0.0) << "not limited in the window";
  EXPECT_TRUE(std::isnan(growth.take_seconds(std::nullopt))) << "a failed read";
  EXPECT_TRUE(std::isnan(growth.take_seconds(6'000'000'000ull))) << "nothing known before it";
  EXPECT_DOUBLE_EQ(growth.take_seconds(7'000'000'000ull), 1.0);
  EXPECT_TRUE(std::isnan(growth.take_seconds(1'000'000'000ull))) << "a counter that went back was reset";
}

TEST(GpuClocks, LimitedSharesOfTheWindow) {
  GpuClocks c;
  c.window_s = 2.0;
  c.power_limited_s = 0.5;
  c.thermal_limited_s = 0;
  EXPECT_DOUBLE_EQ(c.power_limited_fraction(), 0.25);
  EXPECT_DOUBLE_EQ(c.thermal_limited_fraction(), 0.0);
  c.power_limited_s = 2.01;  // the counter advances in steps
  EXPECT_DOUBLE_EQ(c.power_limited_fraction(), 1.0);
  c.window_s = kNotMeasured;
  EXPECT_TRUE(std::isnan(c.power_limited_fraction()));
  c.window_s = 0;
  EXPECT_TRUE(std::isnan(c.power_limited_fraction()));
  EXPECT_TRUE(std::isnan(GpuClocks{}.thermal_limited_fraction()));
}

TEST(EpochClocks, OneRankKeepsItsOwnReadings) {
  testing::SoloCommunicator solo;
  GpuClocks mine;
  mine.window_s = 4.0;
  mine.sm_clock_mhz = 1687.5;
  mine.temperature_c = 61.25;
  mine.power_limited_s = 3.0;
  const EpochClocks c = reduce_epoch_clocks(solo, std::vector<GpuClocks>{mine});
  EXPECT_DOUBLE_EQ(c.sm_clock_min_mhz, 1687.5);
  EXPECT_DOUBLE_EQ(c.sm_clock_max_mhz, 1687.5);
  EXPECT_DOUBLE_EQ(c.temperature_min_c, 61.25);
  EXPECT_DOUBLE_EQ(c.temperature_max_c, 61.25);
  EXPECT_DOUBLE_EQ(c.power_limited_fraction, 0.75);
  EXPECT_TRUE(std::isnan(c.thermal_limited_fraction)) << "not read: NaN, not an infinity";

  const EpochClocks none = reduce_epoch_clocks(solo, std::vector<GpuClocks>{GpuClocks{}});
  EXPECT_TRUE(std::isnan(none.sm_clock_min_mhz));
  EXPECT_TRUE(std::isnan(none.sm_clock_max_mhz));
  EXPECT_TRUE(std::isnan(none.power_limited_fraction));
  EXPECT_TRUE(std::isnan(none.temperature_max_c));
}

TEST(EpochClocks, LineSaysWhatWasMeasured) {
  EXPECT_EQ(clocks_line(EpochClocks{}), "") << "nothing measured (the CPU engine): no line";
  EpochClocks c;
  c.sm_clock_min_mhz = 1635;
  c.sm_clock_max_mhz = 1680.2;
  c.temperature_min_c = 58;
  c.temperature_max_c = 65.4;
  c.power_limited_fraction = 0.996;
  c.thermal_limited_fraction = 0;
  EXPECT_EQ(clocks_line(c),
            "GPU clocks in the last epoch: SM 1,635-1,680 MHz across GPUs at 58-65 C; the power limit held the clocks "
            "down for 100% of it, temperature for 0% (the most limited GPU)");
  c.temperature_min_c = c.temperature_max_c = kNotMeasured;
  c.sm_clock_max_mhz = c.sm_clock_min_mhz;
  c.power_limited_fraction = kNotMeasured;
  c.thermal_limited_fraction = kNotMeasured;
  EXPECT_EQ(clocks_line(c), "GPU clocks in the last epoch: SM 1,635 MHz");
  c.sm_clock_min_mhz = c.sm_clock_max_mhz = kNotMeasured;
  c.thermal_limited_fraction = 0.25;
  EXPECT_EQ(clocks_line(c), "GPU clocks in the last epoch: temperature held the clocks down for 25% of it (the most limited GPU)");
}

}  // namespace
}  // namespace sb
