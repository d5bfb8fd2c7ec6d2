#include "train/engines/dp/data_parallel_engine.h"

#include <chrono>

namespace sb {
namespace {
using Clock = std::chrono::steady_clock;

// Adds the time `work` takes to `seconds`.
template <typename Work>
void timed(double& seconds, Work&& work) {
  const auto t0 = Clock::now();
  work();
  seconds += std::chrono::duration<double>(Clock::now() - t0).count();
}
}  // namespace

DataParallelEngine::DataParallelEngine(std::unique_ptr<Replicas> replicas, int64_t train_size, int64_t test_size)
    : replicas_(std::move(replicas)), threads_(replicas_->count()), train_size_(train_size), test_size_(test_size) {}

EngineFacts DataParallelEngine::describe() const {
  EngineFacts facts;
  facts.device_name = std::to_string(replicas_->count()) + " x " + replicas_->device_name() + " (DataParallel)";
  facts.parameter_count = replicas_->parameter_count();
  facts.train_size = train_size_;
  facts.test_size = test_size_;
  return facts;
}

PhaseTimes DataParallelEngine::train_step(std::span<const int64_t> indices, const StepInfo& info) {
  PhaseTimes t;
  double* s = t.seconds;
  Replicas& r = *replicas_;
  const std::vector<BatchSlice> slices = scatter_slices(static_cast<int64_t>(indices.size()), r.count());
  timed(s[kPhaseData], [&] { r.assemble_batch(indices, info); });
  timed(s[kPhaseComm], [&] {
    r.broadcast_parameters();
    r.scatter_batch(slices);
  });
  timed(s[kPhaseForward], [&] { threads_.run([&](int k) { r.forward(k, slices[static_cast<size_t>(k)], info); }); });
  timed(s[kPhaseComm], [&] { r.gather_outputs(slices); });
  timed(s[kPhaseForward], [&] { r.loss_and_gradient(static_cast<int64_t>(indices.size())); });
  timed(s[kPhaseComm], [&] { r.scatter_output_gradient(slices); });
  timed(s[kPhaseBackward], [&] { threads_.run([&](int k) { r.backward(k, slices[static_cast<size_t>(k)]); }); });
  timed(s[kPhaseComm], [&] { r.reduce_gradients(); });
  timed(s[kPhaseOptimizer], [&] { r.optimizer_step(info.lr); });
  return t;
}

}  // namespace sb
