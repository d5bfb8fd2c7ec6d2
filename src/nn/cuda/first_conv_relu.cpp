#include "nn/cuda/first_conv_relu.h"

#include "core/error.h"
#include "kernels/small_conv.h"
#include "nn/cuda/tensor_util.h"

namespace sb::cuda {
namespace {

kernels::FirstConvShape shape_of(const LayerSpec& spec, const Shape& x, const Shape& y) {
  kernels::FirstConvShape s;
  s.n = x[0];
  s.h = x[2];
  s.w = x[3];
  s.k = spec.out;
  s.p = y[2];
  s.q = y[3];
  s.pad = static_cast<int>(spec.pad);
  s.stride = static_cast<int>(spec.stride);
  return s;
}

}  // namespace

FirstConvRelu::FirstConvRelu(const LayerSpec& conv, Context& ctx) : spec_(conv), ctx_(ctx) {
  if (conv.kind != LayerKind::Conv2d || conv.in != 1 || conv.kernel != 3 || !conv.bias ||
      !kernels::first_conv_supports(conv.out))
    fatal("FirstConvRelu '" + conv.name +
          "': needs a 3x3 Conv2d with bias from one channel to a power of two up to 256 channels");
}

const DeviceTensor& FirstConvRelu::forward(const DeviceTensor& x, Mode) {
  if (!views_.compute_params) fatal("FirstConvRelu '" + spec_.name + "': forward before bind");
  check_activation(x, ctx_, spec_, 4);
  const Shape out = output_shape(spec_, x.shape());  // a UserError naming the layer on a bad shape
  x_ = x;
  y_ = output_tensor(y_buffer_, out, ctx_);
  const float* bias = views_.params + spec_.out * kernels::kFirstConvTaps;
  kernels::first_conv_relu_forward(x.data, views_.compute_params, bias, y_.data, shape_of(spec_, x.shape(), out),
                                   ctx_.layout(), ctx_.compute_dtype(), ctx_.stream());
  return y_;
}

const DeviceTensor& FirstConvRelu::backward(const DeviceTensor& dy) {
  if (!x_.data) fatal("FirstConvRelu '" + spec_.name + "': backward before forward");
  if (!views_.grads) fatal("FirstConvRelu '" + spec_.name + "': backward without gradient buffers");
  if (dy.shape() != y_.shape())
    throw UserError("Conv2d '" + spec_.name + "' got an output gradient of shape " + dy.shape().str() +
                    " for an output of shape " + y_.shape().str());
  check_activation(dy, ctx_, spec_, 4);
  const kernels::FirstConvShape s = shape_of(spec_, x_.shape(), y_.shape());
  float* ws = workspace_.ensure_as<float>(static_cast<size_t>(kernels::first_conv_backward_workspace(s)));
  kernels::first_conv_relu_backward(x_.data, y_.data, dy.data, views_.grads, ws, s, ctx_.layout(), ctx_.compute_dtype(),
                                    ctx_.stream());
  ctx_.gradients_ready(views_.grads);
  no_dx_ = DeviceTensor{nullptr, x_.desc};
  return no_dx_;
}

}  // namespace sb::cuda
