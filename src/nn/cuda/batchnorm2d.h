// BatchNorm2d through cuDNN's graph API, with PyTorch's semantics (batch statistics in Train mode with a
// momentum-0.1 running update using the unbiased variance; running statistics in Eval mode; eps 1e-5).
// Scale, bias, running statistics and their gradients are fp32; x and y are in the compute dtype.
//
// A following ReLU can be fused (enable_fused_relu, set by Sequential): the forward graph then ends in a
// ReLU node, and the ReLU layer after it becomes a pass-through that masks the gradient. Where no engine
// runs a graph, the legacy batch-norm call stands in (bn_legacy.h) and the ReLU runs as a kernel. Eval
// tries the NORM_FORWARD inference phase, then the same maths as a pointwise graph (x * a + b), then the
// legacy call.
#pragma once
#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

class BatchNorm2d final : public Layer {
 public:
  BatchNorm2d(const LayerSpec& spec, Context& ctx);
  void bind(const ParamViews& views) override { views_ = views; }
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;

  // The output becomes max(bn(x), 0). Backward then expects dy already masked by the ReLU.
  void enable_fused_relu() { relu_ = true; }

 private:
  LayerSpec spec_;
  Context& ctx_;
  ParamViews views_;
  bool relu_ = false;
  Mode mode_ = Mode::Train;
  float epsilon_, momentum_;  // host scalars the graph reads by value
  DeviceTensor x_, y_, dx_;
  DeviceBuffer y_buffer_, dx_buffer_;
  DeviceBuffer saved_;        // [2C]: batch mean, then inverse std (or Eval's inverse running std)
  DeviceBuffer running_out_;  // [2C]: next running mean, then variance; copied over the buffers
  DeviceBuffer affine_;       // [2C]: Eval's per-channel a, b when the pointwise graph stands in
};

}  // namespace sb::cuda
