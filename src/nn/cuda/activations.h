// Parameter-free layers over our kernels (kernels/elementwise.h, kernels/loss.h): ReLU, Flatten,
// LogSoftmax.
#pragma once
#include "nn/cuda/parameter_free_layer.h"

namespace sb::cuda {

class FusedBnRun;

class ReLU final : public ParameterFreeLayer {
 public:
  using ParameterFreeLayer::ParameterFreeLayer;
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;
  // The preceding BatchNorm2d already applied the ReLU (fused): forward passes x through, backward
  // still masks the gradient (x > 0 exactly where the fused output is positive).
  void set_applied_by_previous_layer() { fused_ = true; }
  // The output gradient is a buffer that nothing reads after this layer's backward: backward masks it in
  // place and returns it, instead of writing a gradient buffer of its own.
  void allow_writing_output_gradient();
  // The fused run that computed this ReLU's input (relu(bn(x) + x) at an identity block's end) may mask
  // this layer's gradient in its own first backward pass, where this layer may write its output gradient;
  // backward then passes dy through (FusedBnRun::mask_following_relu_gradient).
  void set_gradient_mask_run(FusedBnRun* run);

 private:
  bool fused_ = false;
  bool dy_writable_ = false;
  FusedBnRun* mask_run_ = nullptr;
};

// N,C,H,W -> N,C*H*W in PyTorch's (C, H, W) order: a view under NCHW (or when H = W = 1), a transpose
// under NHWC.
class Flatten final : public ParameterFreeLayer {
 public:
  using ParameterFreeLayer::ParameterFreeLayer;
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;
};

class LogSoftmax final : public ParameterFreeLayer {
 public:
  using ParameterFreeLayer::ParameterFreeLayer;
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;
};

}  // namespace sb::cuda
