// The loss on the device: one fused kernel (kernels/loss.h) per batch computes the loss gradient and adds
// the batch's loss and correct predictions to counters in device memory, which the host reads only at an
// epoch's end, an evaluation's end or a checkpoint.
#pragma once
#include <cstdint>

#include "kernels/loss.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "train/engines/engine.h"

namespace sb::cuda {

// Loss totals accumulated on the device.
class DeviceLossTotals {
 public:
  DeviceLossTotals();
  kernels::LossCounters* data() const { return static_cast<kernels::LossCounters*>(counters_.data()); }
  void zero(cudaStream_t stream) const;
  // Reads the totals (waiting for `stream`), leaving them as they are.
  EvalTotals read(cudaStream_t stream) const;
  // Reads the totals and zeroes them (waiting for `stream`).
  EvalTotals take(cudaStream_t stream) const;
  // Synchronous copies (cudaMemcpy: after all the device's work), for checkpoints.
  EvalTotals copy_out() const;
  void copy_in(const EvalTotals& totals) const;

 private:
  DeviceBuffer counters_;
};

class DeviceLoss {
 public:
  // log_probabilities: the network's output is log-probabilities (NLL loss); otherwise logits (softmax
  // cross-entropy), among them those of a network that leaves its LogSoftmax to the loss
  // (cuda::Network::log_softmax_in_loss).
  explicit DeviceLoss(bool log_probabilities) : log_probabilities_(log_probabilities) {}

  // Queues the loss of `output` against `labels` into `totals`. With with_gradient, also the loss
  // gradient, multiplied by *loss_scale when loss_scale is not null (fp16), which is returned (a view
  // of a buffer of this object); without, the returned tensor has no data.
  const DeviceTensor& enqueue(const DeviceTensor& output, const int32_t* labels, int64_t batch,
                              const DeviceLossTotals& totals, const float* loss_scale, bool with_gradient,
                              cudaStream_t stream);

 private:
  bool log_probabilities_;
  DeviceBuffer dlogits_;
  DeviceTensor grad_;
};

}  // namespace sb::cuda
