// BatchNorm2d through cuDNN's graph API, with PyTorch's semantics (batch statistics in Train mode with a
// momentum-0.1 running update using the unbiased variance; running statistics in Eval mode; eps 1e-5).
// Scale, bias, running statistics and their gradients are fp32; x and y are in the compute dtype.
//
// A following ReLU can be fused (enable_fused_relu, set by Sequential): the output is then max(bn(x), 0),
// from a ReLU node at the end of the forward graph where the path has one, otherwise from our ReLU kernel,
// and the ReLU layer after it becomes a pass-through that masks the gradient.
//
// The implementation is ContextOptions::batchnorm_path (nn/batchnorm_path.h, docs/cudnn.md). Auto takes
// the first that runs: Train forward tries the NORM_FORWARD training graph with the ReLU fused, then
// without, then the legacy call (bn_legacy.h); Eval tries the NORM_FORWARD inference graph (the ReLU fused
// first, then not), then the legacy call; the same maths as a pointwise graph (x * a + b) runs only when
// forced (pointwise); backward
// tries the NORM_BACKWARD graph, then the legacy call. A forced path runs only itself (with the ReLU fused
// into the graph when asked for) and otherwise throws a UserError naming the path and the layer, as
// auto does when even the legacy call has no kernel.
#pragma once
#include <string>

#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

struct BnShape;

class BatchNorm2d final : public Layer {
 public:
  BatchNorm2d(const LayerSpec& spec, Context& ctx);
  void bind(const ParamViews& views) override { views_ = views; }
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;

  // The output becomes max(bn(x), 0). Backward then expects dy already masked by the ReLU.
  void enable_fused_relu() { relu_ = true; }

 private:
  // Each writes y_ (Train also the running statistics) and returns whether its graph applied the ReLU.
  bool forward_training(const BnShape& s);
  bool forward_inference(const BnShape& s);
  // The chosen path (the last one, under auto) has no engine or kernel for `what`: a UserError naming the
  // option, the layer and the input.
  [[noreturn]] void path_cannot_run(const std::string& what) const;

  LayerSpec spec_;
  Context& ctx_;
  ParamViews views_;
  bool relu_ = false;
  Mode mode_ = Mode::Train;
  float epsilon_, momentum_;  // host scalars the graph reads by value
  DeviceTensor x_, y_, dx_;
  DeviceBuffer y_buffer_;
  DeviceBuffer saved_;        // [2C]: batch mean, then inverse std (or Eval's inverse running std)
  DeviceBuffer running_out_;  // [2C]: next running mean, then variance; copied over the buffers
  DeviceBuffer affine_;       // [2C]: Eval's per-channel a, b when the pointwise graph stands in
};

}  // namespace sb::cuda
