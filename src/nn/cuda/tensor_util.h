// Small helpers shared by the CUDA layers: output tensors over grow-only buffers and activation checks.
#pragma once
#include <string>

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
// An input gradient of the shape from the context's shared buffers (Context::acquire_gradient), in the
// context's compute dtype: it stays valid until the container that receives it gives it back.
DeviceTensor gradient_tensor(const Shape& shape, Context& ctx);
// Where a container walks its steps backward: gives back `handed`, the gradient one of its steps wrote and
// handed to the step below, once that step's backward (which returned `below`) is queued. Nothing is given
// back where `handed` is the container's own output gradient `dy` (the caller's to give back) or where the
// step below returned the gradient it was handed.
void release_handed_down(const DeviceTensor& handed, const DeviceTensor& below, const DeviceTensor& dy, Context& ctx);

// A view of the same memory with another shape (Flatten, identity layers).
DeviceTensor reshaped(const DeviceTensor& x, const Shape& shape, Layout layout);

// The layer as the messages name it: its kind and name, "Conv2d 'block1.conv1'", followed by the fused run
// it leads where `run` names one ("Conv2d 'conv2' (conv, ReLU, pooling and flatten run)").
std::string layer_label(const LayerSpec& spec, const char* run = nullptr);

// Where every backward starts: stops with a sentence naming the layer (as layer_label) when no forward has
// run (it sets `y`, the layer's output) or when `dy` does not have y's shape. The label is built only for
// a failure: backward runs every eager step.
void check_output_gradient(const LayerSpec& spec, const DeviceTensor& y, const DeviceTensor& dy, const char* run = nullptr);

// A layer with parameters also needs its gradient buffers before its backward.
void check_gradient_buffers(const LayerSpec& spec, const float* grads, const char* run = nullptr);

// Stops with a sentence when x is not in the context's dtype and layout or not of the expected rank.
void check_activation(const DeviceTensor& x, const Context& ctx, const LayerSpec& spec, size_t rank);

}  // namespace sb::cuda
