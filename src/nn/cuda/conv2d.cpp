#include "nn/cuda/conv2d.h"

#include "core/error.h"
#include "kernels/elementwise.h"
#include "nn/cuda/tensor_util.h"

namespace sb::cuda {

Conv2d::Conv2d(const LayerSpec& spec, Context& ctx) : spec_(spec), ctx_(ctx) {
  if (spec.in <= 0 || spec.out <= 0 || spec.kernel <= 0 || spec.stride <= 0 || spec.pad < 0)
    throw UserError("Conv2d '" + spec.name + "' has a non-positive size");
}

const void* Conv2d::compute_weights() {
  if (!views_.compute_params) fatal("Conv2d '" + spec_.name + "': forward before bind");
  if (ctx_.layout() == Layout::NCHW || views_.filters_krsc) return views_.compute_params;
  void* krsc = w_krsc_.ensure(static_cast<size_t>(weight_count()) * dtype_size(ctx_.compute_dtype()));
  kernels::nchw_to_nhwc(views_.compute_params, krsc, spec_.out, spec_.in, spec_.kernel, spec_.kernel,
                        ctx_.compute_dtype(), ctx_.stream());
  return krsc;
}

const DeviceTensor& Conv2d::forward(const DeviceTensor& x, Mode mode) {
  FusedBnRun* source = prologue_source_;
  prologue_source_ = nullptr;  // one forward's worth
  // A run that deferred its apply hands an output without memory; its input has the same shape.
  check_activation(source ? DeviceTensor{source->input().data, x.desc} : x, ctx_, spec_, 4);
  const Shape out = output_shape(spec_, x.shape());  // a UserError naming the layer on a bad shape
  geometry_ = ConvGeometry{x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3], spec_.out, spec_.kernel,
                           spec_.kernel, out[2], out[3], spec_.pad, spec_.stride};
  x_ = x;
  y_ = output_tensor(y_buffer_, out, ctx_);
  w_ = compute_weights();
  float* statistics = statistics_target_;
  statistics_target_ = nullptr;
  prologue_run_ = nullptr;
  wrote_statistics_ = false;
  const bool has_own_bias = !bias_by_consumer_ && spec_.bias;
  if (mode != Mode::Train || has_own_bias) statistics = nullptr;
  if (source) {
    if (has_own_bias) fatal("Conv2d '" + spec_.name + "': a prologue with a bias of its own");
    if (forward_through_prologue(*source, statistics)) return y_;
    x_ = source->write_deferred_output();
  }
  forward_plain(statistics);
  return y_;
}

void Conv2d::forward_plain(float* statistics) {
  if (statistics) {
    const ConvStatistics sums{statistics, statistics + spec_.out};
    wrote_statistics_ = conv_forward_fused(ctx_, geometry_, x_.data, nullptr, w_, y_.data, &sums);
    if (wrote_statistics_) return;
  }
  const float* bias = bias_by_consumer_ ? nullptr : this->bias();
  const bool fused = bias && ctx_.options().fuse_conv_bias && conv_forward(ctx_, geometry_, x_.data, w_, y_.data, bias);
  if (fused) return;
  conv_forward(ctx_, geometry_, x_.data, w_, y_.data, nullptr);
  if (bias)
    kernels::bias_add(y_.data, y_.dtype(), bias, DType::F32, geometry_.n, geometry_.k, geometry_.p, geometry_.q,
                      ctx_.layout(), ctx_.stream());
}

bool Conv2d::forward_through_prologue(const FusedBnRun& source, float* statistics) {
  prologue_ = source.deferred_prologue();
  const void* input = source.input().data;
  const ConvStatistics sums{statistics, statistics ? statistics + spec_.out : nullptr};
  // With the next batch norm's sums in the same graph where an engine runs it, else the prologue alone.
  wrote_statistics_ = statistics && conv_forward_fused(ctx_, geometry_, input, &prologue_, w_, y_.data, &sums);
  if (!wrote_statistics_ && !conv_forward_fused(ctx_, geometry_, input, &prologue_, w_, y_.data, nullptr)) return false;
  prologue_run_ = &source;
  return true;
}

void Conv2d::weight_gradient(const DeviceTensor& dy, void* dw, DType dw_dtype, cudaStream_t stream) {
  if (!prologue_run_) {
    conv_backward_filter(ctx_, geometry_, x_.data, dy.data, dw, dw_dtype, stream);
    return;
  }
  const void* input = prologue_run_->input().data;
  if (conv_backward_filter_fused(ctx_, geometry_, input, prologue_, dy.data, dw, dw_dtype, stream)) return;
  // No engine applies the prologue in the weight gradient: the normalised input once more, on this stream.
  void* normalised = normalised_.ensure(static_cast<size_t>(x_.numel()) * dtype_size(x_.dtype()));
  prologue_run_->apply_into(normalised, stream);
  conv_backward_filter(ctx_, geometry_, normalised, dy.data, dw, dw_dtype, stream);
}

void Conv2d::input_gradient(const DeviceTensor& dy) {
  const DeviceTensor sum = sum_;
  sum_ = DeviceTensor{};
  const std::optional<DgradBatchNorm> fold = fold_;
  fold_.reset();
  folded_ = false;
  if (skip_dx_) {
    dx_ = DeviceTensor{nullptr, x_.desc};
    return;
  }
  if (!sum.data) {
    dx_ = gradient_tensor(x_.shape(), ctx_);
    if (fold) {
      DgradBatchNorm bn = *fold;
      bn.relu_gradient = dx_.data;
      folded_ = conv_backward_data_bn_relu(ctx_, geometry_, dy.data, w_, bn);
      if (folded_) return;
    }
    conv_backward_data(ctx_, geometry_, dy.data, w_, dx_.data);
    return;
  }
  if (sum.shape() != x_.shape() || sum.dtype() != x_.dtype() || sum.layout() != x_.layout())
    fatal("Conv2d '" + spec_.name + "': asked to add its input gradient into a tensor of shape " + sum.shape().str() +
          " for an input of shape " + x_.shape().str());
  dx_ = sum;
  if (conv_backward_data_accumulate(ctx_, geometry_, dy.data, w_, dx_.data)) return;
  // No engine adds in the dgrad: the plain dgrad, then the add.
  const DeviceTensor own = gradient_tensor(x_.shape(), ctx_);
  conv_backward_data(ctx_, geometry_, dy.data, w_, own.data);
  kernels::add(own.data, dx_.data, dx_.data, dx_.numel(), dx_.dtype(), ctx_.stream());
  ctx_.release_gradient(own.data);  // read on the compute stream only
}

const DeviceTensor& Conv2d::backward(const DeviceTensor& dy) {
  check_output_gradient(spec_, y_, dy);
  check_gradient_buffers(spec_, views_.grads);
  check_activation(dy, ctx_, spec_, 4);
  const DType dt = ctx_.compute_dtype();
  const Layout layout = ctx_.layout();

  // The weight gradient reads x and dy, both queued: it may run beside dgrad, which the layers below wait for.
  const cudaStream_t wgrad = ctx_.begin_weight_gradient();
  input_gradient(dy);

  const int64_t wn = weight_count();
  // Whether the flat gradient takes cuDNN's filter layout as it is (KCRS under NCHW, KRSC when stored so).
  const bool same_order = layout == Layout::NCHW || views_.filters_krsc;
  if (dt == DType::F32 && same_order) {
    weight_gradient(dy, views_.grads, DType::F32, wgrad);
  } else {
    // dw in the compute dtype and the filter layout, then into the fp32 gradient (transposed to KCRS in the
    // same pass where the gradient is not stored KRSC).
    void* dw = ctx_.weight_gradient_scratch().ensure(static_cast<size_t>(wn) * dtype_size(dt));
    weight_gradient(dy, dw, dt, wgrad);
    if (same_order) {
      kernels::accumulate_into_f32(dw, dt, views_.grads, wn, /*accumulate=*/false, wgrad);
    } else {
      kernels::krsc_to_kcrs_f32(dw, dt, views_.grads, spec_.out, spec_.in, spec_.kernel, spec_.kernel, wgrad);
    }
  }
  if (spec_.bias)
    kernels::bias_backward(dy.data, dt, views_.grads + wn, geometry_.n, geometry_.k, geometry_.p, geometry_.q, layout,
                           /*accumulate=*/false, wgrad);
  ctx_.gradients_ready(views_.grads);
  return dx_;
}

}  // namespace sb::cuda
