// Parameter-free layers over our kernels (kernels/elementwise.h, kernels/loss.h): ReLU, Flatten,
// LogSoftmax.
#pragma once
#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

class ReLU final : public Layer {
 public:
  ReLU(const LayerSpec& spec, Context& ctx) : spec_(spec), ctx_(ctx) {}
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;
  // The preceding BatchNorm2d already applied the ReLU (fused): forward passes x through, backward
  // still masks the gradient (x > 0 exactly where the fused output is positive).
  void set_applied_by_previous_layer() { fused_ = true; }

 private:
  LayerSpec spec_;
  Context& ctx_;
  bool fused_ = false;
  DeviceTensor y_, dx_;
  DeviceBuffer y_buffer_, dx_buffer_;
};

// N,C,H,W -> N,C*H*W in PyTorch's (C, H, W) order: a view under NCHW (or when H = W = 1), a transpose
// under NHWC.
class Flatten final : public Layer {
 public:
  Flatten(const LayerSpec& spec, Context& ctx) : spec_(spec), ctx_(ctx) {}
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;

 private:
  LayerSpec spec_;
  Context& ctx_;
  DeviceTensor x_, y_, dx_;
  DeviceBuffer y_buffer_, dx_buffer_;
};

class LogSoftmax final : public Layer {
 public:
  LogSoftmax(const LayerSpec& spec, Context& ctx) : spec_(spec), ctx_(ctx) {}
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;

 private:
  LayerSpec spec_;
  Context& ctx_;
  DeviceTensor y_, dx_;
  DeviceBuffer y_buffer_, dx_buffer_;
};

}  // namespace sb::cuda
