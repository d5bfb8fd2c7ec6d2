// A Conv2d with bias followed by ReLU, a 2x2 max pool, an optional Dropout and Flatten (MNIST's conv2
// block) as two passes each way: cuDNN's convolution without its bias (an inner Conv2d), then one kernel of
// ours (kernels/pool_dropout.h) for bias + ReLU + pool + dropout, writing the flattened output directly in
// PyTorch's (C, H, W) order whatever the layout. Backward: one kernel for dropout mask + unpool + dReLU and
// the bias gradient's partial sums (plus their block-ordered sum), then the convolution's dgrad and wgrad.
// The dropout mask is the Dropout layer's (same key, step and element indices).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "nn/cuda/context.h"
#include "nn/cuda/conv2d.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

class ConvReluPoolRun final : public Layer {
 public:
  // run: [Conv2d (with bias), ReLU, MaxPool2d 2x2, optional Dropout, Flatten].
  ConvReluPoolRun(const std::vector<LayerSpec>& run, Context& ctx);
  void bind(const ParamViews& views) override;
  void set_random_stream(uint64_t key, uint64_t step) override;
  void set_first_sample(int64_t first) override { first_sample_ = first; }
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;

 private:
  LayerSpec conv_spec_;
  LayerSpec dropout_;  // kind Dropout with p = 0 when the run has none
  Context& ctx_;
  std::unique_ptr<Conv2d> conv_;  // without its bias, which the kernels add
  ParamViews views_;
  uint64_t mask_key_ = 0, step_ = 0;
  int64_t first_sample_ = 0;
  double p_ = 0.0;  // the last forward's dropout probability (0 in Eval)
  uint64_t first_element_ = 0;
  DeviceTensor z_, y_, dz_;
  DeviceBuffer y_buffer_, dz_buffer_, workspace_;
};

}  // namespace sb::cuda
