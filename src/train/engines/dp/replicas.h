// The model replicas of a DataParallel step, one per device of one process, and what moves between them.
// DataParallelEngine (data_parallel_engine.h) calls these in nn.DataParallel's order; the CPU replicas
// (cpu_replicas.h) run it in CI, the CUDA replicas (cuda/cuda_replicas.h) on one GPU each. Replica 0 holds
// the run's state: the parameters the optimizer updates, the BN running statistics that persist, the
// optimizer state and the loss totals. Every call returns with its work finished (no overlap between
// phases), so the engine's host clock times each one.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "train/engines/dp/batch_slices.h"
#include "train/engines/engine.h"
#include "train/engines/epoch_reading.h"

namespace sb {

class Replicas {
 public:
  virtual ~Replicas() = default;
  virtual int count() const = 0;
  virtual std::string device_name() const = 0;
  virtual int64_t parameter_count() const = 0;

  // Replica 0 assembles the step's whole batch (training-set indices), as one process would.
  virtual void assemble_batch(std::span<const int64_t> indices, const StepInfo& info) = 0;
  // Replica 0's parameters and buffers (BN running statistics) to every other replica (replicate()).
  virtual void broadcast_parameters() = 0;
  // Each replica's slice of replica 0's batch (scatter()).
  virtual void scatter_batch(std::span<const BatchSlice> slices) = 0;
  // On replica r's own thread: the forward of its slice in training mode; dropout draws the slice's
  // part of the whole batch's mask for the step.
  virtual void forward(int replica, const BatchSlice& slice, const StepInfo& info) = 0;
  // Every replica's output into replica 0's output of the whole batch (gather()).
  virtual void gather_outputs(std::span<const BatchSlice> slices) = 0;
  // On replica 0: the mean loss of the whole batch, its gradient, and the epoch's totals.
  virtual void loss_and_gradient(int64_t batch) = 0;
  // Each replica's slice of the loss gradient (gather()'s backward).
  virtual void scatter_output_gradient(std::span<const BatchSlice> slices) = 0;
  // On replica r's own thread: the backward of its slice into its gradients (zeros for an empty slice).
  virtual void backward(int replica, const BatchSlice& slice) = 0;
  // The sum of every replica's gradients into replica 0's (replicate()'s backward, reduce_add).
  virtual void reduce_gradients() = 0;
  // Replica 0's optimizer over its parameters.
  virtual void optimizer_step(double lr) = 0;

  virtual EvalTotals take_train_totals() = 0;
  // Replica 0 alone, in evaluation mode.
  virtual EvalTotals evaluate(std::span<const int64_t> indices) = 0;
  virtual EngineState save_state() = 0;
  virtual void load_state(const EngineState& state) = 0;
  // What the replicas measure for each epoch's row (EngineMeasurements::readings); none on the CPU.
  virtual std::vector<EpochReading> readings() { return {}; }
  // Each replica's GPU clocks since the last call (EngineMeasurements::take_gpu_clocks); none on the CPU.
  virtual std::vector<GpuClocks> take_gpu_clocks() { return {}; }
};

}  // namespace sb
