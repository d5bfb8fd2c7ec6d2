#include "train/reporting/epoch_readings_observer.h"

#include <span>

namespace sb {
namespace {

void allreduce(Communicator& comm, std::span<double> values, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: comm.allreduce_sum(values); return;
    case ReduceOp::Max: comm.allreduce_max(values); return;
    case ReduceOp::Min: comm.allreduce_min(values); return;
  }
}

}  // namespace

void EpochReadingsObserver::on_run_start(const RunStart&) {
  for (size_t i = 0; i < readings_.size(); ++i) last_[i] = readings_[i].read();
}

void EpochReadingsObserver::measure_epoch(EpochSummary& s) {
  std::vector<double> mine(readings_.size());
  for (size_t i = 0; i < readings_.size(); ++i) {
    const double now = readings_[i].read();
    mine[i] = readings_[i].value == EpochValue::SinceLastEpoch ? now - last_[i] : now;
    last_[i] = now;
  }
  // One all-reduce per way of combining, over the readings that combine that way.
  for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
    std::vector<double> values;
    for (size_t i = 0; i < readings_.size(); ++i)
      if (readings_[i].across_ranks == op) values.push_back(mine[i]);
    if (values.empty()) continue;  // every rank has the same readings: all skip, or none
    allreduce(comm_, values, op);
    for (size_t i = 0, next = 0; i < readings_.size(); ++i)
      if (readings_[i].across_ranks == op) fill_column(s.measured, readings_[i], values[next++]);
  }
}

}  // namespace sb
