// MaxPool2d, AvgPool2d and GlobalAvgPool over our kernels (kernels/pooling.h); cuDNN's pooling is
// legacy-only in cuDNN 9.
#pragma once
#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

// One class for the three kinds: they differ only in the kernels they call.
class Pool2d final : public Layer {
 public:
  Pool2d(const LayerSpec& spec, Context& ctx);
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;

 private:
  LayerSpec spec_;
  Context& ctx_;
  DeviceTensor x_, y_, dx_;
  DeviceBuffer y_buffer_, dx_buffer_;
};

}  // namespace sb::cuda
