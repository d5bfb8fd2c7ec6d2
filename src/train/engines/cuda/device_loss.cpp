#include "train/engines/cuda/device_loss.h"

#include "core/cuda_check.h"

namespace sb::cuda {
namespace {
EvalTotals to_totals(const kernels::LossCounters& c) {
  return EvalTotals{c.loss_sum, static_cast<int64_t>(c.correct), static_cast<int64_t>(c.samples)};
}
}  // namespace

DeviceLossTotals::DeviceLossTotals() { counters_.ensure_as<kernels::LossCounters>(1); }

void DeviceLossTotals::zero(cudaStream_t stream) const {
  CHECK_CUDA(cudaMemsetAsync(data(), 0, sizeof(kernels::LossCounters), stream));
}

EvalTotals DeviceLossTotals::read(cudaStream_t stream) const {
  kernels::LossCounters host{};
  CHECK_CUDA(cudaMemcpyAsync(&host, data(), sizeof host, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  return to_totals(host);
}

EvalTotals DeviceLossTotals::take(cudaStream_t stream) const {
  kernels::LossCounters host{};
  CHECK_CUDA(cudaMemcpyAsync(&host, data(), sizeof host, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaMemsetAsync(data(), 0, sizeof host, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  return to_totals(host);
}

EvalTotals DeviceLossTotals::copy_out() const {
  kernels::LossCounters host{};
  CHECK_CUDA(cudaMemcpy(&host, data(), sizeof host, cudaMemcpyDeviceToHost));
  return to_totals(host);
}

void DeviceLossTotals::copy_in(const EvalTotals& totals) const {
  const kernels::LossCounters host{totals.loss_sum, static_cast<unsigned long long>(totals.correct),
                                   static_cast<unsigned long long>(totals.count)};
  CHECK_CUDA(cudaMemcpy(data(), &host, sizeof host, cudaMemcpyHostToDevice));
}

const DeviceTensor& DeviceLoss::enqueue(const DeviceTensor& output, const int32_t* labels, int64_t batch,
                                        const DeviceLossTotals& totals, const float* loss_scale, bool with_gradient,
                                        cudaStream_t stream) {
  constexpr float kObjectiveGradient = 1.0f;  // the batch's mean loss is the objective itself: d/dloss = 1
  const int64_t classes = output.shape()[1];
  void* dlogits = with_gradient ? dlogits_.ensure(output.bytes()) : nullptr;
  if (log_probabilities_) {
    kernels::nll_loss(output.data, labels, dlogits, batch, classes, output.dtype(), kObjectiveGradient, loss_scale, nullptr,
                      totals.data(), stream);
  } else {
    kernels::softmax_cross_entropy(output.data, labels, dlogits, batch, classes, output.dtype(), kObjectiveGradient,
                                   loss_scale, nullptr, totals.data(), stream);
  }
  grad_ = output;
  grad_.data = dlogits;
  return grad_;
}

}  // namespace sb::cuda
