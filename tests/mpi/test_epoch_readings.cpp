// An engine's per-epoch readings (train/engines/epoch_reading.h) through their observer
// (train/reporting/epoch_readings_observer.h) on 1, 2 and 4 ranks: counters give each epoch's growth,
// the ranks' values are summed or the largest or smallest taken, and each lands in its column of the
// epoch's row, an integer column with its "not measured" value where nothing was measured.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "comm/mpi_communicator.h"
#include "train/reporting/epoch_readings_observer.h"
#include "train/reporting/results_observer.h"

namespace sb {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kPeakBase = int64_t{3} << 33;  // past 32 bits, exact in a double

// What one rank's fake engine measures: an energy counter, a peak and a clock that the test moves.
struct FakeDevice {
  double joules = 0;
  double peak_bytes = 0;
  double clock_mhz = 0;

  std::vector<EpochReading> readings() {
    return {
        {&EpochRow::energy_j, ReduceOp::Sum, EpochValue::SinceLastEpoch, [this] { return joules; }},
        {&EpochRow::peak_memory_bytes, ReduceOp::Max, EpochValue::AsRead, [this] { return peak_bytes; }},
        {&EpochRow::sm_clock_min_mhz, ReduceOp::Min, EpochValue::AsRead, [this] { return clock_mhz; }},
        {&EpochRow::peak_allocated_bytes, ReduceOp::Max, EpochValue::AsRead, [] { return kNaN; }},
    };
  }
};

// The run's clock starts (the observer takes the counters' totals).
void start_run(EpochReadingsObserver& observer) {
  const TrainConfig config;
  observer.on_run_start(RunStart{config, 0, 0, 0, TrainClock::now()});
}

EpochSummary measured_epoch(EpochReadingsObserver& observer, int epoch) {
  EpochSummary s;
  s.epoch = epoch;
  observer.measure_epoch(s);
  return s;
}

TEST(EpochReadingsAcrossRanks, CountersGrowPeaksAndMinimaCombine) {
  auto world = MpiCommunicator::world();
  const int r = world->rank(), n = world->size();
  FakeDevice device{1000.0 + r, 0, 0};  // energy before the run's clock starts is not the first epoch's
  EpochReadingsObserver observer(*world, device.readings());
  start_run(observer);

  device.joules += 10.0 * (r + 1);
  device.peak_bytes = static_cast<double>(kPeakBase + r);
  device.clock_mhz = 1500.0 + 10.0 * r;
  const EpochSummary first = measured_epoch(observer, 0);
  EXPECT_DOUBLE_EQ(first.measured.energy_j, 10.0 * n * (n + 1) / 2);
  EXPECT_EQ(first.measured.peak_memory_bytes, kPeakBase + n - 1);
  EXPECT_DOUBLE_EQ(first.measured.sm_clock_min_mhz, 1500.0);
  EXPECT_EQ(first.measured.peak_allocated_bytes, -1) << "NaN in an integer column is its \"not measured\" value";

  device.joules += 0.5 * (r + 1);  // the second epoch's energy alone, not the total since the start
  const EpochSummary second = measured_epoch(observer, 1);
  EXPECT_DOUBLE_EQ(second.measured.energy_j, 0.5 * n * (n + 1) / 2);
  EXPECT_EQ(second.measured.peak_memory_bytes, kPeakBase + n - 1);

  // The summary's row is where the results row starts: the readings' columns pass through as measured.
  const EpochRow row = to_epoch_row(second);
  EXPECT_EQ(row.epoch, 2);
  EXPECT_DOUBLE_EQ(row.energy_j, second.measured.energy_j);
  EXPECT_EQ(row.peak_memory_bytes, kPeakBase + n - 1);
  EXPECT_EQ(row.peak_allocated_bytes, -1);
}

TEST(EpochReadingsAcrossRanks, AReadingNotMeasuredStaysNotMeasured) {
  auto world = MpiCommunicator::world();
  // A GPU without an energy counter (NVML missing) reads NaN: the epoch's energy is NaN, not 0.
  std::vector<EpochReading> readings{
      {&EpochRow::energy_j, ReduceOp::Sum, EpochValue::SinceLastEpoch, [] { return kNaN; }}};
  EpochReadingsObserver observer(*world, std::move(readings));
  start_run(observer);
  EXPECT_TRUE(std::isnan(measured_epoch(observer, 0).measured.energy_j));
}

TEST(EpochReadingsAcrossRanks, AnEngineWithoutReadingsLeavesTheRowNotMeasured) {
  auto world = MpiCommunicator::world();
  EpochReadingsObserver observer(*world, {});
  start_run(observer);
  const EpochSummary s = measured_epoch(observer, 0);
  EXPECT_TRUE(std::isnan(s.measured.energy_j));
  EXPECT_EQ(s.measured.peak_memory_bytes, -1);
  EXPECT_EQ(s.measured.peak_allocated_bytes, -1);
  EXPECT_EQ(s.measured.images_skipped, -1);
}

}  // namespace
}  // namespace sb
