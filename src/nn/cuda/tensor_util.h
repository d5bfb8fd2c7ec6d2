// Small helpers shared by the CUDA layers: output tensors over grow-only buffers and activation checks.
#pragma once
#include "nn/cuda/context.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {

// The layout a tensor of this shape has in this context: the context's for 4-d, NCHW (meaning plain
// row-major) otherwise.
Layout layout_for(const Shape& shape, const Context& ctx);

// A tensor of the shape over `buffer`, grown when needed, in the context's compute dtype.
DeviceTensor output_tensor(DeviceBuffer& buffer, const Shape& shape, const Context& ctx);

// A view of the same memory with another shape (Flatten, identity layers).
DeviceTensor reshaped(const DeviceTensor& x, const Shape& shape, Layout layout);

// Stops with a sentence when x is not in the context's dtype and layout or not of the expected rank.
void check_activation(const DeviceTensor& x, const Context& ctx, const LayerSpec& spec, size_t rank);

}  // namespace sb::cuda
