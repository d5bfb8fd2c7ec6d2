// Sequential and residual containers over CUDA layers, binding their children's views in spec order.
// Sequential also fuses BatchNorm2d + ReLU pairs when the context allows it.
#pragma once
#include <memory>
#include <vector>

#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

class Sequential final : public Layer {
 public:
  Sequential(const LayerSpec& spec, Context& ctx);
  void bind(const ParamViews& views) override;
  void set_random_stream(uint64_t key, uint64_t step) override;
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;

 private:
  std::vector<LayerSpec> child_specs_;
  std::vector<std::unique_ptr<Layer>> children_;
};

// y = main(x) + shortcut(x), with an identity shortcut when the spec has none.
class Residual final : public Layer {
 public:
  Residual(const LayerSpec& spec, Context& ctx);
  void bind(const ParamViews& views) override;
  void set_random_stream(uint64_t key, uint64_t step) override;
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;

 private:
  LayerSpec spec_;
  Context& ctx_;
  std::unique_ptr<Layer> main_, shortcut_;
  DeviceTensor y_, dx_;
  DeviceBuffer y_buffer_, dx_buffer_;
};

}  // namespace sb::cuda
