// The CPU reference engine: the model in fp32 through the CPU layers, gradients averaged by its
// gradient-sync strategy (train/engines/gradient_sync.h; by default one blocking MPI all-reduce through
// the Communicator), the optimizer over the flat buffers.
#pragma once
#include <memory>
#include <optional>

#include "data/cpu_batches.h"
#include "data/input_counters.h"
#include "nn/cpu/network.h"
#include "optim/optimizer.h"
#include "train/engines/engine_base.h"
#include "train/engines/gradient_sync.h"
#include "train/engines/host_allreduce_sync.h"

namespace sb {

class CpuEngine final : public EngineBase, private EngineRunState, private EngineMeasurements {
 public:
  // The datasets must outlive the engine. local_ranks: the ranks on this node, which share its cores
  // among their image decoding threads (--workers 0). sync: the strategy that averages the gradients (a
  // host row of the strategies table, src/cli/gradient_sync_table.h).
  CpuEngine(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm, int local_ranks = 1,
            const GradientSyncStrategy& sync = kHostAllreduce);

  EngineFacts describe() const override;
  PhaseTimes train_step(std::span<const int64_t> indices, const StepInfo& info) override;
  EvalTotals train_totals(TotalsRead read) override;
  EvalTotals evaluate(std::span<const int64_t> indices) override;
  EngineRunState& run_state() override { return *this; }
  EngineMeasurements& measurements() override { return *this; }

  cpu::Network<float>& network() { return net_; }
  Optimizer& optimizer() { return *optimizer_; }

 private:
  // The run state (EngineRunState).
  EngineState save() override;
  void load(const EngineState& state) override;
  std::mutex* update_mutex() override { return &update_mutex_; }
  EngineState save_model() override;
  EngineState save_running() override;
  // What it measures (EngineMeasurements).
  std::optional<InputTotals> input_totals() const override;

  float loss_and_gradient(const Tensor<float>& output, const std::vector<int32_t>& labels, Tensor<float>& grad);
  // Forward, loss and backward of one micro-batch of a step of `step_samples` samples, adding its time to t.
  void run_micro_batch(std::span<const int64_t> indices, const StepInfo& info, size_t micro, uint64_t position,
                       size_t step_samples, PhaseTimes& t);
  // With several micro-batches: the gradient of micro-batch `micro` of `count` joins the step's sum.
  void accumulate_gradient(size_t micro, size_t count);

  cpu::Network<float> net_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<GradientSync> sync_;  // averages net_'s gradients across the ranks
  std::mutex update_mutex_;  // held while the update changes the parameters and optimizer state
  uint64_t dropout_key_;
  int64_t micro_batch_;  // per-rank samples of a micro-batch (--batch-size)
  std::vector<float> accumulated_;  // the sum of a step's earlier micro-batch gradients (--accumulate-steps)
  Tensor<float> grad_;
  EvalTotals train_totals_;
  CpuBatches input_;  // each step's batch and its labels
};

}  // namespace sb
