#include "nn/cuda/bn_fused_run.h"

#include "core/error.h"
#include "kernels/batchnorm.h"
#include "kernels/bn_fused.h"
#include "kernels/elementwise.h"
#include "kernels/pooling.h"
#include "nn/cpu/dropout.h"
#include "nn/cuda/activations.h"
#include "nn/cuda/batchnorm2d.h"
#include "nn/cuda/factory.h"
#include "nn/cuda/tensor_util.h"
#include "nn/fusion_plan.h"

namespace sb::cuda {
namespace {

kernels::BnFusedShape fused_shape(const DeviceTensor& t) {
  const Shape& s = t.shape();
  return kernels::BnFusedShape{s[0], s[1], s[2], s[3], t.layout(), t.dtype()};
}

// Where a training forward's finalize writes: the batch's mean and 1/std, the running statistics, the
// coefficients a and b of y = a x + b in their slots of `state`, and with the batch norms folded -mean, for
// the convolution that recomputes the output in its dgrad.
kernels::BnFinalize finalize_arguments(int64_t c, const LayerSpec& bn, const ParamViews& views, float* state,
                                       const Context& ctx) {
  kernels::BnFinalize f;
  f.scale = views.params;
  f.bias = views.params + c;
  f.eps = static_cast<float>(bn.eps);
  f.momentum = bn.momentum;
  f.saved_mean = run_slot(state, kRunMean, c);
  f.saved_inv_std = run_slot(state, kRunInvStd, c);
  f.running_mean = views.buffers;
  f.running_var = views.buffers + c;
  f.a = run_slot(state, kRunA, c);
  f.b = run_slot(state, kRunB, c);
  if (ctx.options().fold_batch_norm) f.neg_mean = run_slot(state, kRunNegMean, c);
  return f;
}

// The per-channel coefficients a and b of y = a x + b in their slots of `state`: in training from the batch's
// statistics (also saving its mean and 1/std, and updating the running statistics): the sums a convolution
// gave when `given`, else a pass over x; in evaluation from the running statistics.
void channel_coefficients(const kernels::BnFusedShape& s, const LayerSpec& bn, const ParamViews& views, const DeviceTensor& x,
                          Mode mode, float* state, bool given, Context& ctx) {
  const int64_t c = s.c;
  if (mode != Mode::Train) {
    kernels::bn_inference_coefficients(views.params, views.params + c, views.buffers, views.buffers + c,
                                       static_cast<float>(bn.eps), run_slot(state, kRunA, c), run_slot(state, kRunB, c),
                                       c, ctx.stream());
    return;
  }
  kernels::BnFinalize f = finalize_arguments(c, bn, views, state, ctx);
  if (given) {
    kernels::bn_finalize_sums(s, run_slot(state, kRunSum, c), run_slot(state, kRunSqSum, c), f, ctx.stream());
    return;
  }
  void* workspace = ctx.workspace().ensure(kernels::bn_fused_workspace_bytes(s));
  kernels::bn_channel_statistics(s, kernels::BnStatistics{x.data, workspace}, ctx.stream());
  f.workspace = workspace;
  kernels::bn_finalize_statistics(s, f, ctx.stream());
}

}  // namespace

FusedBnRun::FusedBnRun(std::vector<LayerSpec> specs, bool adds_residual, bool relu_after_add, Context& ctx)
    : specs_(std::move(specs)), adds_residual_(adds_residual), relu_after_add_(relu_after_add), ctx_(ctx) {
  const bool kinds_ok = !specs_.empty() && specs_.size() <= 3 && specs_[0].kind == LayerKind::BatchNorm2d &&
                        (specs_.size() < 2 || specs_[1].kind == LayerKind::ReLU) &&
                        (specs_.size() < 3 || has_dropout() || has_pool());
  if (!kinds_ok)
    fatal("FusedBnRun: expects [BatchNorm2d], [BatchNorm2d, ReLU], [BatchNorm2d, ReLU, Dropout] or "
          "[BatchNorm2d, ReLU, MaxPool2d]");
  if (has_pool() && adds_residual_) fatal("FusedBnRun: a run that ends in a max pool cannot add the residual");
  if (relu_after_add_ && (specs_.size() != 1 || !adds_residual_))
    fatal("FusedBnRun: a ReLU after the add needs a lone BatchNorm2d that takes the add");
  // The run's own layers (they validate the specs, e.g. the dropout probability) for the shapes the kernels
  // do not take; with BN and ReLU paired as Sequential pairs them.
  for (const auto& s : specs_) separate_.push_back(make_layer(s, ctx));
  if (relu_in_run() && ctx.options().fuse_bn_relu) {
    static_cast<BatchNorm2d&>(*separate_[0]).enable_fused_relu();
    static_cast<ReLU&>(*separate_[1]).set_applied_by_previous_layer();
  }
  if (has_dropout()) mask_key_ = dropout_mask_key(0, specs_[2].name);
}

void FusedBnRun::bind(const ParamViews& views) {
  views_ = views;
  separate_[0]->bind(views);
}

void FusedBnRun::set_random_stream(uint64_t key, uint64_t step) {
  if (has_dropout()) mask_key_ = dropout_mask_key(key, specs_[2].name);
  step_ = step;
  for (auto& layer : separate_) layer->set_random_stream(key, step);
}

void FusedBnRun::set_first_sample(int64_t first) {
  first_sample_ = first;
  for (auto& layer : separate_) layer->set_first_sample(first);
}

void FusedBnRun::lend_output() {
  if (adds_residual_ || relu_after_add_)
    fatal("fused run '" + specs_[0].name + "': a run that adds the residual keeps its output for backward");
  lends_output_ = true;
}

double FusedBnRun::dropout_p(Mode mode) const {
  return mode == Mode::Train && has_dropout() ? specs_[2].p : 0.0;
}

bool FusedBnRun::max_pool_fits(Mode mode, const kernels::BnFusedShape& s, const DeviceTensor& x) {
  if (!has_pool()) return true;
  const LayerSpec& pool = specs_[2];
  last_pool_.kernel = static_cast<int>(pool.kernel);
  last_pool_.stride = static_cast<int>(pool.stride);
  last_pool_.pad = static_cast<int>(pool.pad);
  if (!kernels::bn_maxpool_supports(s, last_pool_, {x.data, y_.data})) return false;
  if (mode == Mode::Train) {  // the positions of the maxima, for backward
    const kernels::PoolShape shape{s.n, s.c, s.h, s.w, last_pool_.kernel, last_pool_.stride, last_pool_.pad};
    const int64_t bytes = kernels::maxpool_positions_bytes(shape, s.layout, s.dtype);
    last_pool_.positions = static_cast<uint8_t*>(pool_positions_.ensure(static_cast<size_t>(bytes)));
  }
  return true;
}

const DeviceTensor& FusedBnRun::forward(const DeviceTensor& x, Mode mode) {
  const LayerSpec& bn = specs_[0];
  if (!views_.params || !views_.buffers) fatal("fused run '" + bn.name + "': forward before bind");
  check_activation(x, ctx_, bn, 4);
  const Shape shape = has_pool() ? output_shape(specs_[2], output_shape(bn, x.shape())) : output_shape(bn, x.shape());
  const DeviceTensor* residual = residual_;
  const float* residual_bias = residual_bias_;
  FusedBnRun* residual_run = residual_run_;
  if (residual_run && !residual_run->deferred())
    fatal("fused run '" + bn.name + "': given a shortcut run that did not defer its apply");
  if (residual_run) residual = &residual_run->input();  // normalised here, where the kernels take the shape
  const int64_t given_channels = given_statistics_channels_;
  const bool defer = defer_next_apply_ && (takes_folded_backward() || defers_apply_to_add());
  defer_next_apply_ = false;
  deferred_ = false;
  residual_ = nullptr;  // one forward's worth
  residual_bias_ = nullptr;
  residual_run_ = nullptr;
  given_statistics_channels_ = 0;
  if (adds_residual_) check_residual(shape, residual);
  x_ = x;
  mode_ = mode;
  if (defer)  // the output stays unallocated unless the convolution asks for it (write_deferred_output)
    y_ = DeviceTensor{nullptr, TensorDesc{shape, ctx_.compute_dtype(), x.layout()}};
  else
    y_ = lends_output_ ? gradient_tensor(shape, ctx_) : output_tensor(y_buffer_, shape, ctx_);
  const kernels::BnFusedShape s = fused_shape(x);
  last_relu_bits_ = nullptr;  // apply_arguments sets them where the fused forward stores them
  last_pool_ = kernels::BnMaxPool{};  // max_pool_fits sets it where the run has a pool
  fused_ = kernels::bn_fused_supports(s, dropout_p(mode) > 0, {x.data, y_.data, residual ? residual->data : nullptr}) &&
           max_pool_fits(mode, s, x);
  if (!fused_) {
    if (lends_output_ && y_.data) ctx_.release_gradient(y_.data);  // the separate layers write their own outputs
    if (!y_.data) y_ = output_tensor(y_buffer_, shape, ctx_);
    if (residual_run) residual = &residual_run->write_deferred_output();
    return forward_separately(x, mode, residual, residual_bias);
  }
  if (mode == Mode::Train && s.n * s.h * s.w <= 1)
    throw UserError("BatchNorm2d '" + bn.name + "' needs more than one value per channel in training, got input " +
                    x.shape().str());

  const kernels::BnApply apply =
      coefficients_and_apply(s, x, mode, given_channels, defer, residual, residual_bias, residual_run);
  if (defer) {  // the next convolution applies it as it loads x, or asks for it with apply_into
    deferred_ = true;
    deferred_apply_ = apply;
    return y_;
  }
  if (has_pool()) kernels::bn_apply_maxpool_forward(s, apply, last_pool_, ctx_.stream());
  else kernels::bn_apply_forward(s, apply, ctx_.stream());
  return y_;
}

kernels::BnApply FusedBnRun::coefficients_and_apply(const kernels::BnFusedShape& s, const DeviceTensor& x, Mode mode,
                                                    int64_t given_channels, bool defer, const DeviceTensor* residual,
                                                    const float* residual_bias, const FusedBnRun* residual_run) {
  const LayerSpec& bn = specs_[0];
  const int64_t c = s.c;
  if (given_channels != 0 && given_channels != c)
    fatal("fused run '" + bn.name + "': given the sums of " + std::to_string(given_channels) + " channels for an input of " +
          std::to_string(c));
  float* state = channel_state(c);
  const bool given = given_channels != 0 && mode == Mode::Train;
  // The apply pass finalizes a convolution's sums itself where it runs now (not deferred, no pool).
  const bool finalize_in_apply = given && !defer && !has_pool() && s.layout == Layout::NHWC;
  if (!finalize_in_apply) channel_coefficients(s, bn, views_, x, mode, state, given, ctx_);
  kernels::BnApply apply = apply_arguments(s, state, mode, residual, residual_bias, residual_run);
  apply.from_end = mode != Mode::Train || given;  // no statistics pass read x before it
  if (finalize_in_apply) {
    apply.sum = run_slot(state, kRunSum, c);
    apply.sqsum = run_slot(state, kRunSqSum, c);
    apply.finalize = finalize_arguments(c, bn, views_, state, ctx_);
  }
  return apply;
}

void FusedBnRun::check_residual(const Shape& shape, const DeviceTensor* residual) const {
  const std::string& name = specs_[0].name;
  if (!residual) fatal("fused run '" + name + "': forward without the Residual's shortcut output");
  if (residual->shape() != shape)
    throw UserError("Residual of '" + name + "': main branch gives " + shape.str() + " but shortcut gives " +
                    residual->shape().str());
}

kernels::BnApply FusedBnRun::apply_arguments(const kernels::BnFusedShape& s, const float* state, Mode mode,
                                             const DeviceTensor* residual, const float* residual_bias,
                                             const FusedBnRun* residual_run) {
  kernels::BnApply apply;
  apply.a = run_slot(state, kRunA, s.c);
  apply.b = run_slot(state, kRunB, s.c);
  last_p_ = dropout_p(mode);
  last_keep_bits_ = nullptr;
  if (last_p_ > 0) {
    first_element_ = slice_mask_offset(specs_[2].name, x_.shape(), first_sample_);
    // Stored for backward where the kernels store one (NHWC); the passes draw it again otherwise.
    if (const size_t bytes = kernels::bn_fused_mask_bytes(s))
      last_keep_bits_ = keep_bits_.ensure_as<uint32_t>(bytes / sizeof(uint32_t));
  }
  apply.x = x_.data;
  apply.relu = relu_in_run() || relu_after_add_;
  apply.relu_after_residual = relu_after_add_;
  apply.dropout = kernels::BnDropout{last_p_, mask_key_, step_, ctx_.device_step(), first_element_, last_keep_bits_};
  apply.residual = residual ? residual->data : nullptr;
  apply.residual_bias = residual_bias;
  if (residual_run) {  // the shortcut's batch norm, applied to its input as it is added
    apply.residual_scale = residual_run->deferred_apply_.a;
    apply.residual_bias = residual_run->deferred_apply_.b;
  }
  apply.y = y_.data;
  // The ReLU after the add keeps which outputs are positive for the backward that masks its gradient (forward
  // reset last_relu_bits_ for runs that store none).
  if (relu_after_add_ && mode == Mode::Train && s.layout == Layout::NHWC)
    last_relu_bits_ = relu_bits_.ensure_as<uint32_t>(kernels::bn_fused_mask_bytes(s) / sizeof(uint32_t));
  apply.relu_bits = last_relu_bits_;
  return apply;
}

const DeviceTensor& FusedBnRun::forward_separately(const DeviceTensor& x, Mode mode, const DeviceTensor* residual,
                                                   const float* residual_bias) {
  if (fallback_note_.empty())
    fallback_note_ = specs_[0].name + ": " + x.shape().str() + " " + layout_name(x.layout()) +
                     kRefusedByFusedKernels + ", separate layers\n";
  const DeviceTensor* h = &x;
  for (auto& layer : separate_) h = &layer->forward(*h, mode);
  if (!residual) return *h;
  kernels::add(h->data, residual->data, y_.data, y_.numel(), y_.dtype(), ctx_.stream());
  if (residual_bias) {
    const Shape& s = y_.shape();
    kernels::bias_add(y_.data, y_.dtype(), residual_bias, DType::F32, s[0], s[1], s[2], s[3], y_.layout(), ctx_.stream());
  }
  if (relu_after_add_) kernels::relu_forward(y_.data, y_.data, y_.numel(), y_.dtype(), ctx_.stream());
  return y_;
}

ConvPrologue FusedBnRun::deferred_prologue() const {
  if (!deferred_) fatal("fused run '" + specs_[0].name + "': asked for the prologue of an apply it did not defer");
  return ConvPrologue{deferred_apply_.a, deferred_apply_.b, DType::F32, relu_in_run()};
}

const DeviceTensor& FusedBnRun::write_deferred_output() {
  if (!y_.data) y_ = output_tensor(y_buffer_, y_.shape(), ctx_);
  apply_into(y_.data, ctx_.stream());
  return y_;
}

void FusedBnRun::apply_into(void* out, cudaStream_t stream) const {
  if (!deferred_) fatal("fused run '" + specs_[0].name + "': asked to apply a forward it did not defer");
  kernels::BnApply apply = deferred_apply_;
  apply.y = out;
  kernels::bn_apply_forward(fused_shape(x_), apply, stream);
}

kernels::BnBackward FusedBnRun::backward_arguments(const DeviceTensor& dy, void* workspace) const {
  const int64_t c = x_.shape()[1];
  const float* state = static_cast<const float*>(channel_state_.data());
  kernels::BnBackward b;
  b.x = x_.data;
  b.dy = dy.data;
  b.a = run_slot(state, kRunA, c);
  b.b = run_slot(state, kRunB, c);
  b.relu = relu_in_run();  // a ReLU after the add: masked by its own layer's backward, or by pass 1 here
  b.dropout = kernels::BnDropout{last_p_, mask_key_, step_, ctx_.device_step(), first_element_, last_keep_bits_};
  b.pool = last_pool_;  // dy is the pool's output gradient
  b.scale = views_.params;
  b.saved_mean = run_slot(state, kRunMean, c);
  b.saved_inv_std = run_slot(state, kRunInvStd, c);
  b.workspace = workspace;
  b.dscale = views_.grads;
  b.dbias = views_.grads + c;
  b.dx = dx_.data;
  return b;
}

// Masking by another run's bits makes this a shortcut's lone batch norm and that run the main branch's
// relu_after_add one: neither has a dropout or a pool, and the add gave both the block output's shape.
FusedBnRun* FusedBnRun::pair_backward_run() const {
  if (!ctx_.options().shortcut_bn_paired || relu_after_add_ || !masks_following_relu_gradient()) return nullptr;
  return following_relu_output_->views_.grads ? following_relu_output_ : nullptr;
}

void FusedBnRun::backward_as_pair(FusedBnRun& main, const DeviceTensor& dy, const kernels::BnFusedShape& s) {
  // Two workspaces from the context's scratch, each aligned as the buffer is.
  const size_t bytes = device_aligned_bytes(kernels::bn_fused_workspace_bytes(s));
  char* workspace = static_cast<char*>(ctx_.workspace().ensure(2 * bytes));
  // dx3 over dy, which the ReLU let this run write (the masking) and which nothing reads after these passes.
  main.dx_ = DeviceTensor{dy.data, main.x_.desc};
  kernels::BnBackward m = main.backward_arguments(dy, workspace);
  m.relu_output_bits = main.last_relu_bits_;
  const kernels::BnBackward b = backward_arguments(dy, workspace + bytes);
  kernels::bn_backward_pair_reduce(s, m, b, ctx_.stream());
  kernels::bn_backward_pair_dx(s, m, b, ctx_.stream());
  main.paired_dy_ = dy.data;
  paired_last_backward_ = true;
  ctx_.gradients_ready(views_.grads);
}

std::optional<DgradBatchNorm> FusedBnRun::folded_backward_inputs() {
  if (!takes_folded_backward() || !fused_ || mode_ != Mode::Train || x_.layout() != Layout::NHWC || !views_.grads)
    return std::nullopt;
  const int64_t c = x_.shape()[1];
  float* state = channel_state(c);
  DgradBatchNorm bn;
  bn.bn_input = x_.data;
  bn.mean = run_slot(state, kRunMean, c);
  bn.neg_mean = run_slot(state, kRunNegMean, c);
  bn.inv_std = run_slot(state, kRunInvStd, c);
  bn.scale = views_.params;
  bn.bias = views_.params + c;
  bn.dscale = views_.grads;
  bn.dbias = views_.grads + c;
  bn.eq_dy_scale = run_slot(state, kRunEqDy, c);
  bn.eq_x_scale = run_slot(state, kRunEqX, c);
  bn.eq_bias = run_slot(state, kRunEqBias, c);
  return bn;
}

const DeviceTensor& FusedBnRun::backward(const DeviceTensor& dy) {
  const LayerSpec& bn = specs_[0];
  // A deferred apply may leave the output unallocated: its description still checks dy.
  check_output_gradient(bn, deferred_ ? DeviceTensor{dy.data, y_.desc} : y_, dy, "fused run");
  if (!fused_) {  // as Sequential::backward, giving back the gradients the run's own layers wrote
    const DeviceTensor* g = &dy;
    for (auto it = separate_.rbegin(); it != separate_.rend(); ++it) {
      const DeviceTensor* below = &(*it)->backward(*g);
      release_handed_down(*g, *below, dy, ctx_);
      g = below;
    }
    return *g;
  }
  if (!views_.grads) fatal("fused run '" + bn.name + "': backward without gradient buffers");
  if (mode_ != Mode::Train) fatal("fused run '" + bn.name + "': the CUDA path has no backward after an Eval-mode forward");
  check_activation(dy, ctx_, bn, 4);
  if (paired_dy_) {  // the shortcut's run computed this backward with its own (backward_as_pair)
    if (paired_dy_ != dy.data)
      fatal("fused run '" + bn.name + "': its backward was paired with the shortcut's on another output gradient");
    paired_dy_ = nullptr;
    ctx_.gradients_ready(views_.grads);
    return dx_;
  }
  dx_ = gradient_tensor(x_.shape(), ctx_);
  const kernels::BnFusedShape s = fused_shape(x_);
  if (!kernels::bn_fused_supports(s, last_p_ > 0, {dy.data, dx_.data}))
    fatal("fused run '" + bn.name + "': the output gradient is not aligned for the fused kernels");
  const bool folded = folded_backward_;
  folded_backward_ = false;
  paired_last_backward_ = false;
  if (FusedBnRun* main = pair_backward_run()) {
    backward_as_pair(*main, dy, s);
    return dx_;
  }
  kernels::BnBackward b = backward_arguments(dy, ctx_.workspace().ensure(kernels::bn_fused_workspace_bytes(s)));
  if (masks_following_relu_gradient()) {
    b.relu_output_bits = relu_output_run()->last_relu_bits_;
    b.dy_in_place = dy.data;
  }
  if (folded) {  // dy is the masked gradient, whose sums the dgrad wrote as dscale and dbias
    kernels::bn_backward_sums_from_gradients(s, b.dscale, b.dbias, b.saved_inv_std, b.workspace, ctx_.stream());
  } else {
    kernels::bn_backward_reduce(s, b, ctx_.stream());
  }
  kernels::bn_backward_dx(s, b, ctx_.stream());
  ctx_.gradients_ready(views_.grads);
  return dx_;
}

}  // namespace sb::cuda
