#include "train/engines/dp/cpu_replicas.h"

#include <algorithm>

#include "core/error.h"
#include "models/registry.h"
#include "nn/cpu/loss.h"
#include "train/run_setup.h"

namespace sb {
namespace {
// The elements of one sample in a tensor whose first axis is the batch.
int64_t per_sample(const Shape& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.rank(); ++i) n *= shape[i];
  return n;
}

// Samples [first, first + count) of `from` into `to` (resized to hold them).
void copy_slice(const Tensor<float>& from, int64_t first, int64_t count, Tensor<float>& to) {
  Shape shape = from.shape();
  const int64_t n = per_sample(shape);
  shape[0] = count;
  to.resize(shape);
  std::copy_n(from.data() + first * n, count * n, to.data());
}

// All of `from` into samples [first, first + from's batch) of `to`.
void place_slice(const Tensor<float>& from, int64_t first, Tensor<float>& to) {
  std::copy_n(from.data(), from.numel(), to.data() + first * per_sample(from.shape()));
}
}  // namespace

CpuReplicas::CpuReplicas(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm)
    : config_(config),
      train_(train),
      rank_(comm.rank()),
      root_(config, train, test, comm),
      slots_(static_cast<size_t>(config.replicas)),
      log_probabilities_(model_info(config.model).outputs_log_probabilities),
      augmentation_(config.augment ? cifar_augmentation() : BatchOptions{}),
      dropout_key_(dropout_stream_key(config.seed, comm.rank())) {
  nets_.push_back(&root_.network());
  for (int r = 1; r < config.replicas; ++r) {
    owned_.push_back(std::make_unique<cpu::Network<float>>(model_spec_for(config, train), config.seed));
    nets_.push_back(owned_.back().get());
  }
}

void CpuReplicas::assemble_batch(std::span<const int64_t> indices, const StepInfo& info) {
  sb::assemble_batch(train_, indices, augmentation_, AugmentKey{config_.seed, info.epoch, rank_}, info.position, images_,
                     labels_);
}

void CpuReplicas::broadcast_parameters() {
  for (size_t r = 1; r < nets_.size(); ++r) {
    nets_[r]->params() = nets_[0]->params();
    nets_[r]->buffers() = nets_[0]->buffers();
  }
}

void CpuReplicas::scatter_batch(std::span<const BatchSlice> slices) {
  for (size_t r = 0; r < slots_.size(); ++r) copy_slice(images_, slices[r].first, slices[r].count, slots_[r].input);
}

void CpuReplicas::forward(int replica, const BatchSlice& slice, const StepInfo& info) {
  if (slice.count == 0) return;
  cpu::Network<float>& net = *nets_[static_cast<size_t>(replica)];
  net.set_random_stream(dropout_key_, static_cast<uint64_t>(info.step));
  net.set_first_sample(slice.first);
  Slot& slot = slots_[static_cast<size_t>(replica)];
  slot.output = net.forward(slot.input, cpu::Mode::Train);
}

void CpuReplicas::gather_outputs(std::span<const BatchSlice> slices) {
  Shape shape = slots_[0].output.shape();
  shape[0] = static_cast<int64_t>(labels_.size());
  output_.resize(shape);
  for (size_t r = 0; r < slots_.size(); ++r)
    if (slices[r].count > 0) place_slice(slots_[r].output, slices[r].first, output_);
}

void CpuReplicas::loss_and_gradient(int64_t batch) {
  const float loss = log_probabilities_ ? cpu::nll_loss(output_, labels_.data(), output_grad_)
                                        : cpu::cross_entropy_loss(output_, labels_.data(), output_grad_);
  totals_.loss_sum += static_cast<double>(loss) * static_cast<double>(batch);
  totals_.correct += cpu::count_correct(output_, labels_.data());
  totals_.count += batch;
}

void CpuReplicas::scatter_output_gradient(std::span<const BatchSlice> slices) {
  for (size_t r = 0; r < slots_.size(); ++r)
    if (slices[r].count > 0) copy_slice(output_grad_, slices[r].first, slices[r].count, slots_[r].output_grad);
}

void CpuReplicas::backward(int replica, const BatchSlice& slice) {
  cpu::Network<float>& net = *nets_[static_cast<size_t>(replica)];
  if (slice.count == 0) {
    std::fill(net.grads().begin(), net.grads().end(), 0.0f);
    return;
  }
  net.backward(slots_[static_cast<size_t>(replica)].output_grad);
}

void CpuReplicas::reduce_gradients() {
  std::vector<float>& sum = nets_[0]->grads();
  for (size_t r = 1; r < nets_.size(); ++r) {
    const std::vector<float>& g = nets_[r]->grads();
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += g[i];
  }
}

void CpuReplicas::optimizer_step(double lr) {
  root_.optimizer().step(nets_[0]->params().data(), nets_[0]->grads().data(), lr);
}

EvalTotals CpuReplicas::take_train_totals() {
  const EvalTotals out = totals_;
  totals_ = EvalTotals{};
  return out;
}

EngineState CpuReplicas::save_state() {
  EngineState s = root_.run_state().save();
  s.train_totals = totals_;
  return s;
}

void CpuReplicas::load_state(const EngineState& state) {
  root_.run_state().load(state);
  totals_ = state.train_totals;
}

}  // namespace sb
