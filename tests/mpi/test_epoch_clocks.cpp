// An epoch's GPU clocks across ranks (train/run/epoch_clocks.h) on 1, 2 and 4 ranks: the slowest and fastest
// rank's clock and the most limited rank's shares, with ranks that measured nothing left out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "comm/mpi_communicator.h"
#include "train/run/epoch_clocks.h"

namespace sb {
namespace {

// Rank r's readings: clock 1500 + 10 r MHz over a 2 s window, power-limited for r / 4 of it.
GpuClocks readings_of(int rank) {
  GpuClocks c;
  c.window_s = 2.0;
  c.sm_clock_mhz = 1500.0 + 10.0 * rank;
  c.temperature_c = 70.0 - rank;
  c.power_limited_s = 0.5 * rank;
  c.thermal_limited_s = 0;
  return c;
}

TEST(EpochClocksAcrossRanks, SlowestFastestAndMostLimited) {
  auto world = MpiCommunicator::world();
  const int last = world->size() - 1;
  const EpochClocks c = reduce_epoch_clocks(*world, std::vector<GpuClocks>{readings_of(world->rank())});
  EXPECT_DOUBLE_EQ(c.sm_clock_min_mhz, 1500.0);
  EXPECT_DOUBLE_EQ(c.sm_clock_max_mhz, 1500.0 + 10.0 * last);
  EXPECT_DOUBLE_EQ(c.power_limited_fraction, std::min(1.0, 0.25 * last));
  EXPECT_DOUBLE_EQ(c.thermal_limited_fraction, 0.0);
  EXPECT_DOUBLE_EQ(c.temperature_min_c, 70.0 - last);
  EXPECT_DOUBLE_EQ(c.temperature_max_c, 70.0);
}

TEST(EpochClocksAcrossRanks, RanksWithoutReadingsAreLeftOut) {
  auto world = MpiCommunicator::world();
  // Rank 0 measured nothing (as a rank without NVML); the others as above.
  const GpuClocks mine = world->rank() == 0 ? GpuClocks{} : readings_of(world->rank());
  const EpochClocks c = reduce_epoch_clocks(*world, std::vector<GpuClocks>{mine});
  if (world->size() == 1) {
    EXPECT_TRUE(std::isnan(c.sm_clock_min_mhz));
    EXPECT_TRUE(std::isnan(c.sm_clock_max_mhz));
    EXPECT_TRUE(std::isnan(c.power_limited_fraction));
    return;
  }
  EXPECT_DOUBLE_EQ(c.sm_clock_min_mhz, 1510.0) << "rank 0's missing clock is not a clock of 0 or infinity";
  EXPECT_DOUBLE_EQ(c.sm_clock_max_mhz, 1500.0 + 10.0 * (world->size() - 1));
  EXPECT_DOUBLE_EQ(c.temperature_max_c, 69.0) << "rank 0's missing temperature is left out";
  EXPECT_DOUBLE_EQ(c.power_limited_fraction, std::min(1.0, 0.25 * (world->size() - 1)));
}

TEST(EpochClocksAcrossRanks, EveryGpuOfEveryRankCounts) {
  // Each rank drives two GPUs (as --parallel dp does) and rank 0 a third that read nothing: the slowest and
  // hottest GPU may be any rank's second, and the unread one is left out.
  auto world = MpiCommunicator::world();
  const int last = world->size() - 1;
  GpuClocks second = readings_of(world->rank());
  second.sm_clock_mhz -= 200.0;
  second.temperature_c += 5.0;
  second.thermal_limited_s = 0.1 * (world->rank() + 1);
  std::vector<GpuClocks> mine{readings_of(world->rank()), second};
  if (world->rank() == 0) mine.push_back(GpuClocks{});
  const EpochClocks c = reduce_epoch_clocks(*world, mine);
  EXPECT_DOUBLE_EQ(c.sm_clock_min_mhz, 1300.0);
  EXPECT_DOUBLE_EQ(c.sm_clock_max_mhz, 1500.0 + 10.0 * last);
  EXPECT_DOUBLE_EQ(c.temperature_min_c, 70.0 - last);
  EXPECT_DOUBLE_EQ(c.temperature_max_c, 75.0);
  EXPECT_DOUBLE_EQ(c.thermal_limited_fraction, 0.05 * (last + 1));
  // A rank with no GPU (the CPU engine) offers nothing.
  const EpochClocks none = reduce_epoch_clocks(*world, std::vector<GpuClocks>{});
  EXPECT_TRUE(std::isnan(none.sm_clock_min_mhz));
  EXPECT_TRUE(std::isnan(none.thermal_limited_fraction));
}

}  // namespace
}  // namespace sb
