#include "nn/cuda/batchnorm2d.h"

#include "core/cuda_check.h"
#include "core/error.h"
#include "kernels/batchnorm.h"
#include "kernels/elementwise.h"
#include "nn/cuda/bn_legacy.h"
#include "nn/cuda/bn_ops.h"
#include "nn/cuda/tensor_util.h"

namespace sb::cuda {

BatchNorm2d::BatchNorm2d(const LayerSpec& spec, Context& ctx)
    : spec_(spec), ctx_(ctx), epsilon_(static_cast<float>(spec.eps)), momentum_(static_cast<float>(spec.momentum)) {
  if (spec.in <= 0) throw UserError("BatchNorm2d '" + spec.name + "' needs a positive channel count");
}

const DeviceTensor& BatchNorm2d::forward(const DeviceTensor& x, Mode mode) {
  if (!views_.params || !views_.buffers) fatal("BatchNorm2d '" + spec_.name + "': forward before bind");
  check_activation(x, ctx_, spec_, 4);
  const Shape shape = output_shape(spec_, x.shape());
  const BnShape s{shape[0], shape[1], shape[2], shape[3]};
  if (mode == Mode::Train && s.n * s.h * s.w <= 1)
    throw UserError("BatchNorm2d '" + spec_.name + "' needs more than one value per channel in training, got input " +
                    x.shape().str());
  x_ = x;
  mode_ = mode;
  y_ = output_tensor(y_buffer_, shape, ctx_);
  const int64_t c = s.c;
  float* saved = saved_.ensure_as<float>(static_cast<size_t>(2 * c));
  const float* scale = views_.params;
  const float* bias = views_.params + c;
  float* running_mean = views_.buffers;
  float* running_var = views_.buffers + c;
  bool relu_done = false;

  if (mode == Mode::Train) {
    float* next = running_out_.ensure_as<float>(static_cast<size_t>(2 * c));
    BnForwardTraining a;
    a.x = x.data; a.y = y_.data; a.scale = scale; a.bias = bias;
    a.saved_mean = saved; a.saved_inv_std = saved + c;
    a.running_mean_in = running_mean; a.running_var_in = running_var;
    a.running_mean_out = next; a.running_var_out = next + c;
    a.epsilon = &epsilon_; a.momentum = &momentum_;
    a.relu = relu_;
    if (relu_ && bn_forward_training_graph(ctx_, s, a)) {
      relu_done = true;
    } else {
      a.relu = false;
      if (!bn_forward_training_graph(ctx_, s, a)) bn_forward_training_legacy(ctx_, s, a);
    }
    // The graph writes the next statistics beside the old ones (its inputs must not alias its outputs,
    // and autotuning runs it several times); they replace the old ones here. Mean and variance are
    // adjacent in the flat buffer, so it is one copy.
    CHECK_CUDA(cudaMemcpyAsync(running_mean, next, static_cast<size_t>(2 * c) * sizeof(float), cudaMemcpyDeviceToDevice,
                               ctx_.stream()));
  } else {
    // The first of these that has an engine: the NORM_FORWARD inference phase, then the same affine map
    // as pointwise nodes (cuDNN 9.19 on Hopper has no engine for the former), each with the ReLU fused
    // first; then the legacy call.
    kernels::bn_inverse_std(running_var, saved + c, c, epsilon_, ctx_.stream());
    float* coef = affine_.ensure_as<float>(static_cast<size_t>(2 * c));
    kernels::bn_inference_coefficients(scale, bias, running_mean, running_var, epsilon_, coef, coef + c, c, ctx_.stream());
    BnForwardInference a;
    a.x = x.data; a.y = y_.data; a.scale = scale; a.bias = bias;
    a.mean = running_mean; a.inv_std = saved + c;
    BnAffine affine;
    affine.x = x.data; affine.y = y_.data; affine.a = coef; affine.b = coef + c;
    bool done = false;
    for (const bool fuse : {true, false}) {
      if (done || (fuse && !relu_)) continue;
      a.relu = affine.relu = fuse;
      done = bn_forward_inference_graph(ctx_, s, a) || bn_affine_graph(ctx_, s, affine);
      relu_done = done && fuse;
    }
    if (!done) bn_forward_inference_legacy(ctx_, s, x.data, y_.data, scale, bias, running_mean, running_var, spec_.eps);
  }
  if (relu_ && !relu_done) kernels::relu_forward(y_.data, y_.data, y_.numel(), y_.dtype(), ctx_.stream());
  return y_;
}

const DeviceTensor& BatchNorm2d::backward(const DeviceTensor& dy) {
  if (!x_.data) fatal("BatchNorm2d '" + spec_.name + "': backward before forward");
  if (!views_.grads) fatal("BatchNorm2d '" + spec_.name + "': backward without gradient buffers");
  if (mode_ != Mode::Train)
    fatal("BatchNorm2d '" + spec_.name + "': the CUDA path has no backward after an Eval-mode forward");
  if (dy.shape() != y_.shape())
    throw UserError("BatchNorm2d '" + spec_.name + "' got an output gradient of shape " + dy.shape().str() +
                    " for an output of shape " + y_.shape().str());
  check_activation(dy, ctx_, spec_, 4);
  const Shape& shape = y_.shape();
  const BnShape s{shape[0], shape[1], shape[2], shape[3]};
  const float* saved = static_cast<const float*>(saved_.data());
  dx_ = output_tensor(dx_buffer_, shape, ctx_);
  BnBackward a;
  a.x = x_.data; a.dy = dy.data; a.scale = views_.params;
  a.saved_mean = saved; a.saved_inv_std = saved + s.c;
  a.dscale = views_.grads; a.dbias = views_.grads + s.c;
  a.dx = dx_.data;
  if (!bn_backward_graph(ctx_, s, a)) bn_backward_legacy(ctx_, s, a, spec_.eps);
  ctx_.gradients_ready(views_.grads);
  return dx_;
}

}  // namespace sb::cuda
