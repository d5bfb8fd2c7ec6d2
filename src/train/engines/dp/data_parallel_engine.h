// nn.DataParallel as an engine: one process drives every replica. Each step broadcasts replica 0's
// parameters, scatters the batch, runs each replica's forward on its own host thread, gathers the outputs
// to replica 0 for the loss, scatters the loss gradient back, runs each replica's backward on its thread,
// reduces the gradients to replica 0 and runs the optimizer there. Nothing overlaps and nothing is
// captured as a graph (docs/decisions.md, "DataParallel is measured, not imitated").
#pragma once
#include <memory>

#include "train/engines/dp/replica_threads.h"
#include "train/engines/dp/replicas.h"
#include "train/engines/engine.h"

namespace sb {

class DataParallelEngine final : public Engine, private EngineRunState, private EngineMeasurements {
 public:
  // The replicas' training and test sets are the run's; train_size and test_size are theirs.
  DataParallelEngine(std::unique_ptr<Replicas> replicas, int64_t train_size, int64_t test_size);

  EngineFacts describe() const override;
  // Phases: data (replica 0 assembles the batch), forward (the replicas' forwards and the loss), backward,
  // comm (broadcast, scatter, gather, the gradient's scatter, reduce), optimizer.
  PhaseTimes train_step(std::span<const int64_t> indices, const StepInfo& info) override;
  // Replica 0's totals; it offers no Peek (count 0).
  EvalTotals train_totals(TotalsRead read) override {
    return read == TotalsRead::Take ? replicas_->take_train_totals() : EvalTotals{};
  }
  EvalTotals evaluate(std::span<const int64_t> indices) override { return replicas_->evaluate(indices); }
  EngineRunState& run_state() override { return *this; }
  EngineMeasurements& measurements() override { return *this; }

  Replicas& replicas() { return *replicas_; }

 private:
  // The run state (EngineRunState) is replica 0's.
  EngineState save() override { return replicas_->save_state(); }
  void load(const EngineState& state) override { replicas_->load_state(state); }
  // What it measures (EngineMeasurements).
  std::vector<EpochReading> readings() override { return replicas_->readings(); }
  std::vector<GpuClocks> take_gpu_clocks() override { return replicas_->take_gpu_clocks(); }

  std::unique_ptr<Replicas> replicas_;
  ReplicaThreads threads_;
  int64_t train_size_, test_size_;
};

}  // namespace sb
