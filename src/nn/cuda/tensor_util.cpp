#include "nn/cuda/tensor_util.h"

#include "core/error.h"

namespace sb::cuda {

Layout layout_for(const Shape& shape, const Context& ctx) {
  return shape.rank() == 4 ? ctx.layout() : Layout::NCHW;
}

namespace {
// A tensor of the shape in the context's compute dtype and layout, without data yet.
DeviceTensor described(const Shape& shape, const Context& ctx) {
  DeviceTensor t;
  t.desc.shape = shape;
  t.desc.dtype = ctx.compute_dtype();
  t.desc.layout = layout_for(shape, ctx);
  return t;
}
}  // namespace

DeviceTensor output_tensor(DeviceBuffer& buffer, const Shape& shape, const Context& ctx) {
  DeviceTensor t = described(shape, ctx);
  t.data = buffer.ensure(t.bytes());
  return t;
}

DeviceTensor gradient_tensor(const Shape& shape, Context& ctx) {
  DeviceTensor t = described(shape, ctx);
  t.data = ctx.acquire_gradient(t.bytes());
  return t;
}

void release_handed_down(const DeviceTensor& handed, const DeviceTensor& below, const DeviceTensor& dy, Context& ctx) {
  if (handed.data != dy.data && below.data != handed.data) ctx.release_gradient(handed.data);
}

DeviceTensor reshaped(const DeviceTensor& x, const Shape& shape, Layout layout) {
  if (shape.numel() != x.numel()) fatal("reshaped: " + x.shape().str() + " cannot become " + shape.str());
  DeviceTensor t = x;
  t.desc.shape = shape;
  t.desc.layout = layout;
  return t;
}

std::string layer_label(const LayerSpec& spec, const char* run) {
  std::string label = std::string(layer_kind_name(spec.kind)) + " '" + spec.name + "'";
  if (run) label += std::string(" (") + run + ")";
  return label;
}

void check_output_gradient(const LayerSpec& spec, const DeviceTensor& y, const DeviceTensor& dy, const char* run) {
  if (!y.data) fatal(layer_label(spec, run) + ": backward before forward");
  if (dy.shape() != y.shape())
    throw UserError(layer_label(spec, run) + " got an output gradient of shape " + dy.shape().str() + " for an output of shape " +
                    y.shape().str());
}

void check_gradient_buffers(const LayerSpec& spec, const float* grads, const char* run) {
  if (!grads) fatal(layer_label(spec, run) + ": backward without gradient buffers");
}

void check_activation(const DeviceTensor& x, const Context& ctx, const LayerSpec& spec, size_t rank) {
  const std::string who = layer_label(spec);
  if (!x.data) fatal(who + " got an input with no data");
  if (x.dtype() != ctx.compute_dtype())
    fatal(who + " got a " + dtype_name(x.dtype()) + " input but the context computes in " + dtype_name(ctx.compute_dtype()));
  if (rank && x.shape().rank() != rank)
    throw UserError(who + " expects a " + std::to_string(rank) + "-d input, got " + x.shape().str());
  if (x.shape().rank() == 4 && x.layout() != ctx.layout())
    fatal(who + " got an " + layout_name(x.layout()) + " input but the context's layout is " + layout_name(ctx.layout()));
}

}  // namespace sb::cuda
