// The state of a layer without parameters over our kernels: its spec and context, the input of the last
// forward (for those whose backward reads it), its output in a grow-only buffer, and its input gradient
// (from the context's shared gradient buffers).
#pragma once
#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

class ParameterFreeLayer : public Layer {
 public:
  // Public, so that the layers can inherit it with `using` (the class stays abstract).
  ParameterFreeLayer(const LayerSpec& spec, Context& ctx) : spec_(spec), ctx_(ctx) {}

 protected:
  LayerSpec spec_;
  Context& ctx_;
  DeviceTensor x_, y_, dx_;
  DeviceBuffer y_buffer_;
};

}  // namespace sb::cuda
