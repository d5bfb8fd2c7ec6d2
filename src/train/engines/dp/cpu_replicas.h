// DataParallel's replicas on the CPU, all in this process: replica 0 is a CpuEngine (its network,
// optimizer, evaluation and state), the others are networks of the same spec. Copies between them are
// plain memory copies. They run the same orchestration as the CUDA replicas, so that CI tests it, and
// serve `--parallel dp --device cpu`.
#pragma once
#include <memory>
#include <vector>

#include "nn/cpu/network.h"
#include "train/engines/cpu_engine.h"
#include "train/engines/dp/replicas.h"

namespace sb {

class CpuReplicas final : public Replicas {
 public:
  // config.replicas replicas. The datasets and the communicator (of this one rank) must outlive them.
  CpuReplicas(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm);

  int count() const override { return static_cast<int>(nets_.size()); }
  std::string device_name() const override { return "cpu"; }
  int64_t parameter_count() const override { return root_.describe().parameter_count; }
  void assemble_batch(std::span<const int64_t> indices, const StepInfo& info) override;
  void broadcast_parameters() override;
  void scatter_batch(std::span<const BatchSlice> slices) override;
  void forward(int replica, const BatchSlice& slice, const StepInfo& info) override;
  void gather_outputs(std::span<const BatchSlice> slices) override;
  void loss_and_gradient(int64_t batch) override;
  void scatter_output_gradient(std::span<const BatchSlice> slices) override;
  void backward(int replica, const BatchSlice& slice) override;
  void reduce_gradients() override;
  void optimizer_step(double lr) override;
  EvalTotals take_train_totals() override;
  EvalTotals evaluate(std::span<const int64_t> indices) override { return root_.evaluate(indices); }
  EngineState save_state() override;
  void load_state(const EngineState& state) override;

  cpu::Network<float>& network(int replica) { return *nets_[static_cast<size_t>(replica)]; }

 private:
  // What one replica holds besides its network: its slice of the batch, its output and the output's gradient.
  struct Slot {
    Tensor<float> input, output, output_grad;
  };

  const TrainConfig& config_;
  const Dataset& train_;
  int rank_;
  CpuEngine root_;
  std::vector<std::unique_ptr<cpu::Network<float>>> owned_;  // replicas 1..n-1
  std::vector<cpu::Network<float>*> nets_;                    // every replica, root_'s first
  std::vector<Slot> slots_;
  bool log_probabilities_;
  BatchOptions augmentation_;
  uint64_t dropout_key_;
  Tensor<float> images_, output_, output_grad_;  // replica 0's whole batch, gathered output, its gradient
  std::vector<int32_t> labels_;
  EvalTotals totals_;
};

}  // namespace sb
