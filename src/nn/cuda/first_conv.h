// The network's first Conv2d (at most four input channels, 3x3), with its bias and the ReLU after it where
// the network has them, as our own kernels (kernels/small_conv.h): one forward pass, and a backward that
// writes only the weight and bias gradients. The containers choose it only for the first layer of the
// network's root (nn/fusion_plan.h), whose input gradient nobody reads: backward returns a tensor of the
// input's shape without data.
#pragma once
#include "kernels/small_conv.h"
#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

class FirstConv final : public Layer {
 public:
  // conv: the Conv2d's spec; relu: the ReLU that follows it runs in the same pass.
  FirstConv(const LayerSpec& conv, bool relu, Context& ctx);
  void bind(const ParamViews& views) override { views_ = views; }
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;

 private:
  kernels::FirstConvOptions options() const;

  LayerSpec spec_;
  bool relu_;
  Context& ctx_;
  ParamViews views_;
  DeviceTensor x_, y_, no_dx_;
  DeviceBuffer y_buffer_, workspace_;
};

}  // namespace sb::cuda
