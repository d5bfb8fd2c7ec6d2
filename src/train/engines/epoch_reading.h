// A figure an engine measures once per epoch (energy, peak memory, ...) and the /epochs column it fills
// (metrics/results_schema.h). The engine hands out its list (EngineMeasurements::readings); one observer
// (train/reporting/epoch_readings_observer.h) reads each at every epoch's end, combines the ranks' values
// and writes the column. A new per-epoch metric is its column's row in SB_EPOCH_COLUMNS and a reading
// next to the code that measures it (docs/architecture.md, "Adding a results metric").
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <variant>

#include "comm/communicator.h"
#include "metrics/results_schema.h"

namespace sb {

// What `read` returns, and so what the epoch's value is.
enum class EpochValue {
  AsRead,          // the value at the epoch's end: a level or a peak so far
  SinceLastEpoch,  // a running total (a counter): the epoch's value is its growth since the last epoch's end
};

struct EpochReading {
  // The column it fills: a double column takes the value as it is (NaN where not measured); an integer
  // column takes it truncated, or the column's "not measured" value for NaN.
  std::variant<double EpochRow::*, int64_t EpochRow::*> column;
  ReduceOp across_ranks;  // how the ranks' values make the epoch's: summed, or the largest or smallest
  EpochValue value;
  std::function<double()> read;  // this rank's reading, NaN where it can't be measured
};

// Writes `value` into the reading's column of `row`.
inline void fill_column(EpochRow& row, const EpochReading& reading, double value) {
  if (const auto* real = std::get_if<double EpochRow::*>(&reading.column)) {
    row.*(*real) = value;
    return;
  }
  const auto integer = std::get<int64_t EpochRow::*>(reading.column);
  row.*integer = std::isfinite(value) ? static_cast<int64_t>(value) : EpochRow{}.*integer;
}

}  // namespace sb
