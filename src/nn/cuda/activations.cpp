#include "nn/cuda/activations.h"

#include "core/error.h"
#include "kernels/elementwise.h"
#include "kernels/loss.h"
#include "nn/cuda/bn_fused_run.h"
#include "nn/cuda/tensor_util.h"

namespace sb::cuda {

const DeviceTensor& ReLU::forward(const DeviceTensor& x, Mode) {
  check_activation(x, ctx_, spec_, 0);
  if (fused_) {
    y_ = x;
    return y_;
  }
  y_ = output_tensor(y_buffer_, x.shape(), ctx_);
  kernels::relu_forward(x.data, y_.data, x.numel(), x.dtype(), ctx_.stream());
  return y_;
}

void ReLU::allow_writing_output_gradient() {
  dy_writable_ = true;
  if (mask_run_) mask_run_->mask_following_relu_gradient();
}

void ReLU::set_gradient_mask_run(FusedBnRun* run) {
  if (!fused_) fatal("ReLU '" + spec_.name + "': only a ReLU applied by the previous layer leaves its mask to it");
  mask_run_ = run;
  if (run && dy_writable_) run->mask_following_relu_gradient();
}

const DeviceTensor& ReLU::backward(const DeviceTensor& dy) {
  check_output_gradient(spec_, y_, dy);
  if (mask_run_ && dy_writable_ && mask_run_->masks_following_relu_gradient()) {
    dx_ = dy;  // masked in place by the run's backward, which comes next
    return dx_;
  }
  dx_ = dy_writable_ ? dy : gradient_tensor(dy.shape(), ctx_);  // each element read, then written, by one thread
  kernels::relu_backward(y_.data, dy.data, dx_.data, dy.numel(), dy.dtype(), ctx_.stream());
  return dx_;
}

const DeviceTensor& Flatten::forward(const DeviceTensor& x, Mode) {
  check_activation(x, ctx_, spec_, 0);
  const Shape out = output_shape(spec_, x.shape());
  x_ = x;
  const bool transpose = x.shape().rank() == 4 && x.layout() == Layout::NHWC && x.shape()[2] * x.shape()[3] > 1;
  if (!transpose) {
    y_ = reshaped(x, out, Layout::NCHW);
    return y_;
  }
  y_ = output_tensor(y_buffer_, out, ctx_);
  const Shape& s = x.shape();
  kernels::nhwc_to_nchw(x.data, y_.data, s[0], s[1], s[2], s[3], x.dtype(), ctx_.stream());
  return y_;
}

const DeviceTensor& Flatten::backward(const DeviceTensor& dy) {
  check_output_gradient(spec_, y_, dy);
  const Shape& s = x_.shape();
  if (y_.data == x_.data) {  // the forward was a view
    dx_ = reshaped(dy, s, x_.layout());
    return dx_;
  }
  dx_ = gradient_tensor(s, ctx_);
  kernels::nchw_to_nhwc(dy.data, dx_.data, s[0], s[1], s[2], s[3], dy.dtype(), ctx_.stream());
  return dx_;
}

const DeviceTensor& LogSoftmax::forward(const DeviceTensor& x, Mode) {
  check_activation(x, ctx_, spec_, 2);
  y_ = output_tensor(y_buffer_, output_shape(spec_, x.shape()), ctx_);
  kernels::log_softmax_forward(x.data, y_.data, x.shape()[0], x.shape()[1], x.dtype(), ctx_.stream());
  return y_;
}

const DeviceTensor& LogSoftmax::backward(const DeviceTensor& dy) {
  check_output_gradient(spec_, y_, dy);
  dx_ = gradient_tensor(dy.shape(), ctx_);
  kernels::log_softmax_backward(y_.data, dy.data, dx_.data, dy.shape()[0], dy.shape()[1], dy.dtype(), ctx_.stream());
  return dx_;
}

}  // namespace sb::cuda
