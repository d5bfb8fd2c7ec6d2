#include "nn/cuda/first_conv.h"

#include "core/error.h"
#include "nn/fusion_plan.h"
#include "nn/cuda/tensor_util.h"

namespace sb::cuda {
static_assert(kernels::kFirstConvMaxChannels == kFirstConvMaxInputChannels,
              "the planner and the first-convolution kernels must agree on the input channels they take");
namespace {

kernels::FirstConvShape shape_of(const LayerSpec& spec, const Shape& x, const Shape& y) {
  kernels::FirstConvShape s;
  s.n = x[0];
  s.c = x[1];
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

FirstConv::FirstConv(const LayerSpec& conv, bool relu, Context& ctx) : spec_(conv), relu_(relu), ctx_(ctx) {
  if (conv.kind != LayerKind::Conv2d || conv.kernel != 3 || !kernels::first_conv_supports(conv.in, conv.out))
    fatal("FirstConv '" + conv.name + "': needs a 3x3 Conv2d from 1 to 4 channels to a power of two up to 256");
}

kernels::FirstConvOptions FirstConv::options() const {
  kernels::FirstConvOptions o;
  o.bias = spec_.bias;
  o.relu = relu_;
  // The flat buffers keep cuDNN's order for the layout where the network says so (nn/filter_order.h).
  o.filters_krsc = ctx_.layout() == Layout::NHWC && views_.filters_krsc;
  return o;
}

const DeviceTensor& FirstConv::forward(const DeviceTensor& x, Mode) {
  if (!views_.compute_params) fatal("FirstConv '" + spec_.name + "': forward before bind");
  check_activation(x, ctx_, spec_, 4);
  const Shape out = output_shape(spec_, x.shape());  // a UserError naming the layer on a bad shape
  x_ = x;
  y_ = output_tensor(y_buffer_, out, ctx_);
  const float* bias = spec_.bias ? views_.params + conv_weight_count(spec_) : nullptr;
  kernels::first_conv_forward(x.data, views_.compute_params, bias, y_.data, shape_of(spec_, x.shape(), out), options(),
                              ctx_.layout(), ctx_.compute_dtype(), ctx_.stream());
  return y_;
}

const DeviceTensor& FirstConv::backward(const DeviceTensor& dy) {
  check_output_gradient(spec_, y_, dy);
  check_gradient_buffers(spec_, views_.grads);
  check_activation(dy, ctx_, spec_, 4);
  const kernels::FirstConvShape s = shape_of(spec_, x_.shape(), y_.shape());
  const kernels::FirstConvOptions o = options();
  float* ws = workspace_.ensure_as<float>(static_cast<size_t>(kernels::first_conv_backward_workspace(s, o)));
  kernels::first_conv_backward(x_.data, y_.data, dy.data, views_.grads, ws, s, o, ctx_.layout(), ctx_.compute_dtype(),
                               ctx_.stream());
  ctx_.gradients_ready(views_.grads);
  no_dx_ = DeviceTensor{nullptr, x_.desc};
  return no_dx_;
}

}  // namespace sb::cuda
