#include "nn/cuda/conv_pool_run.h"

#include "core/error.h"
#include "kernels/pool_dropout.h"
#include "nn/cpu/dropout.h"
#include "nn/cuda/tensor_util.h"

namespace sb::cuda {
namespace {

LayerSpec without_bias(LayerSpec conv) {
  conv.bias = false;
  return conv;
}

kernels::PoolDropoutShape shape_of(const Shape& z) { return kernels::PoolDropoutShape{z[0], z[1], z[2], z[3]}; }

}  // namespace

ConvReluPoolRun::ConvReluPoolRun(const std::vector<LayerSpec>& run, Context& ctx) : ctx_(ctx) {
  if (run.size() < 4 || run[0].kind != LayerKind::Conv2d || !run[0].bias || !kernels::pool_dropout_supports(run[0].out))
    fatal("ConvReluPoolRun: needs a Conv2d with bias to a power of two up to 256 channels, then ReLU, pool, flatten");
  conv_spec_ = run[0];
  conv_ = std::make_unique<Conv2d>(without_bias(conv_spec_), ctx);
  dropout_.kind = LayerKind::Dropout;
  if (run.size() == 5) dropout_ = run[3];
  if (!(dropout_.p >= 0.0 && dropout_.p < 1.0))
    throw UserError("dropout '" + dropout_.name + "' on the GPU needs a probability in [0, 1), got " +
                    std::to_string(dropout_.p));
  mask_key_ = dropout_mask_key(0, dropout_.name);
}

void ConvReluPoolRun::bind(const ParamViews& views) {
  views_ = views;
  conv_->bind(views);
}

void ConvReluPoolRun::set_random_stream(uint64_t key, uint64_t step) {
  mask_key_ = dropout_mask_key(key, dropout_.name);
  step_ = step;
}

const DeviceTensor& ConvReluPoolRun::forward(const DeviceTensor& x, Mode mode) {
  z_ = conv_->forward(x, mode);
  const Shape& z = z_.shape();
  const Shape pooled{z[0], z[1], z[2] / 2, z[3] / 2};
  if (pooled[2] < 1 || pooled[3] < 1)
    throw UserError("MaxPool2d after '" + conv_spec_.name + "' gets a " + z.str() +
                    " input, smaller than its 2x2 window");
  y_ = output_tensor(y_buffer_, Shape{z[0], pooled.numel() / z[0]}, ctx_);
  p_ = mode == Mode::Train ? dropout_.p : 0.0;
  first_element_ = p_ > 0.0 ? slice_mask_offset(dropout_.name, pooled, first_sample_) : 0;
  const kernels::PoolDropoutMask mask{p_, mask_key_, step_, ctx_.device_step(), first_element_};
  kernels::bias_relu_pool_dropout_forward(z_.data, views_.params + conv_weight_count(conv_spec_), y_.data, shape_of(z), mask,
                                          ctx_.layout(), ctx_.compute_dtype(), ctx_.stream());
  return y_;
}

const DeviceTensor& ConvReluPoolRun::backward(const DeviceTensor& dy) {
  // The run ends in the flatten after the conv's pooling: its output is the run's.
  constexpr const char* kRun = "conv, ReLU, pooling and flatten run";
  check_output_gradient(conv_spec_, y_, dy, kRun);
  check_gradient_buffers(conv_spec_, views_.grads, kRun);
  const int64_t weights = conv_weight_count(conv_spec_);
  const kernels::PoolDropoutShape s = shape_of(z_.shape());
  dz_ = output_tensor(dz_buffer_, z_.shape(), ctx_);
  float* ws = workspace_.ensure_as<float>(static_cast<size_t>(kernels::pool_dropout_backward_workspace(s)));
  const kernels::PoolDropoutMask mask{p_, mask_key_, step_, ctx_.device_step(), first_element_};
  // The bias gradient first: it follows the weights in the flat buffer, and the inner convolution's
  // backward declares everything from its weights on final.
  kernels::bias_relu_pool_dropout_backward(z_.data, views_.params + weights, dy.data, dz_.data, views_.grads + weights,
                                           ws, s, mask, ctx_.layout(), ctx_.compute_dtype(), ctx_.stream());
  return conv_->backward(dz_);
}

}  // namespace sb::cuda
