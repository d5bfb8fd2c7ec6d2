// MaxPool2d, AvgPool2d and GlobalAvgPool over our kernels (kernels/pooling.h); cuDNN's pooling is
// legacy-only in cuDNN 9.
#pragma once
#include <cstdint>

#include "nn/cuda/parameter_free_layer.h"

namespace sb::cuda {

// One class for the three kinds: they differ only in the kernels they call.
class Pool2d final : public ParameterFreeLayer {
 public:
  Pool2d(const LayerSpec& spec, Context& ctx);
  const DeviceTensor& forward(const DeviceTensor& x, Mode mode) override;
  const DeviceTensor& backward(const DeviceTensor& dy) override;
  // Whether backward reads the forward's input. Average pooling never does, nor max pooling whose windows
  // keep their positions at any size; the layer before may then lend its output (FusedBnRun::lend_output).
  bool backward_reads_input() const;

 private:
  DeviceBuffer positions_buffer_;
  uint8_t* positions_ = nullptr;  // the last forward's maxima positions, where it kept them
};

}  // namespace sb::cuda
