#include "nn/cuda/containers.h"

#include "core/error.h"
#include "kernels/elementwise.h"
#include "nn/cuda/activations.h"
#include "nn/cuda/batchnorm2d.h"
#include "nn/cuda/bn_fused_run.h"
#include "nn/cuda/conv2d.h"
#include "nn/cuda/factory.h"
#include "nn/cuda/linear.h"
#include "nn/cuda/pooling.h"
#include "nn/cuda/tensor_util.h"
#include "nn/fusion_plan.h"

namespace sb::cuda {
namespace {

FusionAvailability availability(const Context& ctx) {
  FusionAvailability a;
  // A forced batch-norm path (ContextOptions::batchnorm_path) means BatchNorm2d's own graphs or legacy
  // calls: our fused kernels would bypass that choice.
  a.fused_kernels = ctx.options().fused_bn_kernels && ctx.options().batchnorm_path == BatchNormPath::Auto;
  a.cudnn_bn_relu = ctx.options().fuse_bn_relu;
  a.pool_in_run = ctx.options().pool_in_bn_run;
  a.layout = ctx.layout();
  return a;
}

// Whether a layer's backward reads its output gradient on the compute stream only (no weight gradient on
// the second stream reads it later). A ReLU left to the previous layer hands dy to a BatchNorm2d, which
// reads it on the compute stream; a Dropout that is the identity would hand it to any layer, so no Dropout.
bool reads_gradient_on_compute_stream_only(const Layer* layer) {
  return dynamic_cast<const FusedBnRun*>(layer) || dynamic_cast<const BatchNorm2d*>(layer) ||
         dynamic_cast<const ReLU*>(layer) || dynamic_cast<const Pool2d*>(layer);
}

// Whether the input gradient a layer's backward returns may be written by the layer below: a buffer of its
// own that it never reads again (not its output gradient handed on, as a Flatten or an identity Dropout may
// return; a ReLU always writes its own, also when the previous layer applied it), or a Residual's, which is
// its own or an output gradient it was allowed to write.
bool returns_writable_input_gradient(const Layer* layer) {
  if (const auto* s = dynamic_cast<const Sequential*>(layer))  // what its first step returns
    return s->first_layer() && returns_writable_input_gradient(s->first_layer());
  return dynamic_cast<const FusedBnRun*>(layer) || dynamic_cast<const BatchNorm2d*>(layer) ||
         dynamic_cast<const Pool2d*>(layer) || dynamic_cast<const Conv2d*>(layer) ||
         dynamic_cast<const Linear*>(layer) || dynamic_cast<const Residual*>(layer) ||
         dynamic_cast<const ReLU*>(layer);
}

// Tells a layer whose backward may write into its output gradient that it may (the layers that can).
void allow_writing_output_gradient(Layer* layer) {
  if (auto* r = dynamic_cast<Residual*>(layer)) r->allow_writing_output_gradient();
  else if (auto* relu = dynamic_cast<ReLU*>(layer)) relu->allow_writing_output_gradient();
  else if (auto* s = dynamic_cast<Sequential*>(layer)) s->allow_writing_output_gradient();
}

bool is_container(const LayerSpec& s) { return s.kind == LayerKind::Sequential || s.kind == LayerKind::Residual; }

// Runs `body` (which returns the step's output), bracketed by the context's layer timer when one is set
// and the step is a leaf: a container's own steps are timed instead.
template <typename Body>
const DeviceTensor& timed(const Context& ctx, const std::string& label, bool backward, bool container, Body&& body) {
  LayerTimer* timer = ctx.layer_timer();
  if (!timer || container) return body();
  timer->begin(label, backward, ctx.stream());
  const DeviceTensor& out = body();
  timer->end(ctx.stream());
  return out;
}

// The `length` child specs from child i: one fused run.
std::vector<LayerSpec> run_from(const std::vector<LayerSpec>& children, size_t i, size_t length) {
  return std::vector<LayerSpec>(children.begin() + static_cast<std::ptrdiff_t>(i),
                                children.begin() + static_cast<std::ptrdiff_t>(i + length));
}

// The layer of child i's step as the fusion plan has it (a fused run's head builds the whole run).
// `previous`: the layer of the step before, or none.
std::unique_ptr<Layer> make_step_layer(const std::vector<LayerSpec>& children, size_t i, const FusionStep& step, Context& ctx,
                                       bool network_input, const Layer* previous) {
  const LayerSpec& c = children[i];
  switch (step.path) {
    case FusionPath::FusedHead:
      return std::make_unique<FusedBnRun>(run_from(children, i, step.run), step.adds_residual, step.relu_after_add, ctx);
    case FusionPath::CudnnBnRelu: {
      auto bn = std::make_unique<BatchNorm2d>(c, ctx);
      bn->enable_fused_relu();
      return bn;
    }
    case FusionPath::ResidualThenRelu: {
      auto residual = std::make_unique<Residual>(c, ctx, true);
      if (!residual->applies_following_relu())
        fatal("Sequential: residual '" + c.name + "' was planned to apply the following ReLU but its main branch "
              "does not take the add");
      return residual;
    }
    case FusionPath::ReluInPrevious: {
      auto relu = std::make_unique<ReLU>(c, ctx);
      relu->set_applied_by_previous_layer();
      if (const auto* block = dynamic_cast<const Residual*>(previous)) relu->set_gradient_mask_run(block->following_relu_mask_run());
      return relu;
    }
    case FusionPath::FirstConv:
    case FusionPath::ConvReluPool:
    case FusionPath::LinearRelu:
      return make_fused_layer(run_from(children, i, step.run), step.path, ctx);
    case FusionPath::Separate:
    case FusionPath::FusedMember:
      break;
  }
  if (i == 0 && network_input && c.kind == LayerKind::Conv2d) {  // the stem: no dgrad of the input
    auto conv = std::make_unique<Conv2d>(c, ctx);
    conv->skip_input_gradient();
    return conv;
  }
  return make_layer(c, ctx);
}

}  // namespace

Sequential::Sequential(const LayerSpec& spec, Context& ctx, bool residual_main, bool network_input,
                       bool relu_after_residual)
    : ctx_(ctx) {
  const std::vector<LayerSpec>& children = spec.children;
  const FusionPlan plan = plan_fusion(children, availability(ctx), residual_main, network_input, relu_after_residual);
  plan_record_ = plan.record;
  for (size_t i = 0; i < children.size(); ++i) {
    const FusionStep& step = plan.steps[i];
    const LayerSpec& c = children[i];
    if (step.path == FusionPath::FusedMember) {  // counted in its run's step
      steps_.back().params += count_elements(collect_params(c));
      steps_.back().buffers += count_elements(collect_buffers(c));
      steps_.back().label.append("+").append(c.name);
      continue;
    }
    Step s;
    s.params = count_elements(collect_params(c));
    s.buffers = count_elements(collect_buffers(c));
    s.label = c.name;
    s.container = is_container(c);
    s.layer = make_step_layer(children, i, step, ctx, network_input, steps_.empty() ? nullptr : steps_.back().layer.get());
    if (step.path == FusionPath::FusedHead && step.adds_residual) residual_run_ = static_cast<FusedBnRun*>(s.layer.get());
    steps_.push_back(std::move(s));
  }
  // A step's output gradient is the next step's input gradient, which the step may write into (a Residual
  // adds into it, a ReLU masks it in place) where the next step hands it over to be written.
  for (size_t i = 0; i + 1 < steps_.size(); ++i)
    if (returns_writable_input_gradient(steps_[i + 1].layer.get())) cuda::allow_writing_output_gradient(steps_[i].layer.get());
  pair_folds(ctx.options());
  // A fused run before a pool that never reads its input in backward: nothing reads the run's output after
  // the pool's forward, so it lends it from the gradient pool (forward gives it back).
  for (size_t i = 0; i + 1 < steps_.size(); ++i) {
    auto* run = dynamic_cast<FusedBnRun*>(steps_[i].layer.get());
    const auto* pool = dynamic_cast<const Pool2d*>(steps_[i + 1].layer.get());
    if (run && pool && run != residual_run_ && !pool->backward_reads_input()) {
      run->lend_output();
      steps_[i].lends_output = true;
    }
  }
}

void Sequential::pair_folds(const ContextOptions& options) {
  // A convolution followed by a fused batch-norm run writes the run's sums in its epilogue
  // (ContextOptions::fold_batch_norm); a convolution that adds a bias of its own cannot. With
  // fold_bn_statistics alone, a stem on the images' few channels does not: ResNet-50 with all 53 folded ran
  // slower than with the separate passes, with the 52 after the stem faster (docs/decisions.md, "Batch norm:
  // the full fold stays off, the statistics fold in fp16").
  // And under fold_batch_norm a convolution after a [BatchNorm2d, ReLU] run takes the run's backward
  // reduction into its dgrad, and (without a bias of its own) applies the run's normalisation as it loads
  // its input.
  if (!options.fold_batch_norm && !options.fold_bn_statistics) return;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const auto* conv = dynamic_cast<const Conv2d*>(steps_[i].layer.get());
    if (!conv) continue;
    const bool sums = options.fold_batch_norm || conv->input_channels() >= kMinFoldedStatisticsChannels;
    if (i + 1 < steps_.size() && !conv->has_bias() && sums)
      steps_[i].statistics_to = dynamic_cast<FusedBnRun*>(steps_[i + 1].layer.get());
    if (!options.fold_batch_norm) continue;
    auto* before = i > 0 ? dynamic_cast<FusedBnRun*>(steps_[i - 1].layer.get()) : nullptr;
    if (!before || !before->takes_folded_backward()) continue;
    if (conv->computes_input_gradient()) steps_[i].backward_of = before;
    if (!conv->has_bias()) steps_[i - 1].applied_by = static_cast<Conv2d*>(steps_[i].layer.get());
  }
}

void Sequential::allow_writing_output_gradient() {
  if (!steps_.empty()) cuda::allow_writing_output_gradient(steps_.back().layer.get());
}

void Sequential::bind(const ParamViews& views) {
  ParamViews v = views;
  for (auto& s : steps_) {
    s.layer->bind(v);
    v = v.advanced(s.params, s.buffers);
  }
}

void Sequential::set_random_stream(uint64_t key, uint64_t step) {
  for (auto& s : steps_) s.layer->set_random_stream(key, step);
}

void Sequential::set_first_sample(int64_t first) {
  for (auto& s : steps_) s.layer->set_first_sample(first);
}

void Sequential::set_residual(const DeviceTensor* residual, const float* residual_bias) {
  if (!residual_run_) fatal("Sequential: set_residual on a container whose last run does not take the add");
  residual_run_->set_residual(residual, residual_bias);
}

void Sequential::set_residual_run(FusedBnRun* shortcut) {
  if (!residual_run_) fatal("Sequential: set_residual_run on a container whose last run does not take the add");
  residual_run_->set_residual_run(shortcut);
}

const DeviceTensor& Sequential::forward(const DeviceTensor& x, Mode mode) {
  const DeviceTensor* h = &x;
  const void* lent = nullptr;  // the previous step's output, lent from the gradient pool
  Step* deferred_by = nullptr;  // the previous step, a fused run that left its apply to this step's convolution
  for (auto& s : steps_) {
    auto* conv = s.statistics_to ? static_cast<Conv2d*>(s.layer.get()) : nullptr;
    if (conv && mode == Mode::Train)
      conv->write_next_output_statistics(s.statistics_to->statistics_target(conv->output_channels()));
    auto* run = s.applied_by ? static_cast<FusedBnRun*>(s.layer.get()) : nullptr;
    if (run) run->defer_next_apply();
    s.apply_folded = false;
    h = &timed(ctx_, s.label, false, s.container, [&]() -> const DeviceTensor& { return s.layer->forward(*h, mode); });
    if (deferred_by) deferred_by->apply_folded = deferred_by->applied_by->read_input_through_prologue();
    deferred_by = nullptr;
    if (run && run->deferred()) {
      s.applied_by->read_next_input_through(run);
      deferred_by = &s;
    }
    if (conv && mode == Mode::Train) {
      s.statistics_written = conv->wrote_output_statistics();
      if (s.statistics_written) s.statistics_to->use_given_statistics(conv->output_channels());
    }
    if (lent) ctx_.release_gradient(lent);  // its one reader is queued (one the pool did not lend is ignored)
    lent = s.lends_output ? h->data : nullptr;
  }
  return *h;
}

const DeviceTensor& Sequential::backward(const DeviceTensor& dy) {
  const DeviceTensor* g = &dy;
  FusedBnRun* folded_run = nullptr;  // the run whose reduction the step above's dgrad took
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
    if (folded_run && it->layer.get() == folded_run) folded_run->use_folded_backward();
    folded_run = nullptr;
    auto* conv = it->backward_of ? static_cast<Conv2d*>(it->layer.get()) : nullptr;
    if (conv)
      if (const auto bn = it->backward_of->folded_backward_inputs()) conv->fold_next_input_gradient(*bn);
    const DeviceTensor* below = &timed(ctx_, it->label, true, it->container,
                                       [&]() -> const DeviceTensor& { return it->layer->backward(*g); });
    if (conv) {
      it->backward_folded = conv->folded_input_gradient();
      if (it->backward_folded) folded_run = it->backward_of;
    }
    release_handed_down(*g, *below, dy, ctx_);
    g = below;
  }
  return *g;
}

std::string Sequential::fusion_report() const {
  std::string r = plan_record_;
  for (size_t i = 0; i < steps_.size(); ++i) {
    r += cuda::fusion_report(*steps_[i].layer);
    if (steps_[i].statistics_to)
      r += steps_[i].label + " -> " + steps_[i + 1].label +
           (steps_[i].statistics_written ? kStatisticsInConvRecord : kStatisticsPassRecord) + "\n";
    if (steps_[i].backward_of)
      r += steps_[i - 1].label + " <- " + steps_[i].label +
           (steps_[i].backward_folded ? kBackwardInDgradRecord : kBackwardPassRecord) + "\n";
    if (steps_[i].applied_by)
      r += steps_[i].label + " => " + steps_[i + 1].label +
           (steps_[i].apply_folded ? kApplyInPrologueRecord : kApplyPassRecord) + "\n";
  }
  return r;
}

Residual::Residual(const LayerSpec& spec, Context& ctx, bool relu_follows)
    : spec_(spec), ctx_(ctx), relu_follows_(relu_follows) {
  const LayerSpec& main = spec.children.at(0);
  if (main.kind == LayerKind::Sequential) {
    auto seq = std::make_unique<Sequential>(main, ctx, true, false, relu_follows);
    if (seq->adds_residual()) fused_add_main_ = seq.get();
    if (ctx.options().fuse_residual_grad) {
      grad_sum_conv_ = dynamic_cast<Conv2d*>(seq->first_layer());
      if (grad_sum_conv_ && !grad_sum_conv_->computes_input_gradient()) grad_sum_conv_ = nullptr;
      // An identity block adds into dy: every reader of dy in main_ must be done before the dgrad.
      if (spec.children.size() == 1 && !reads_gradient_on_compute_stream_only(seq->last_layer()))
        grad_sum_conv_ = nullptr;
    }
    main_ = std::move(seq);
  } else {
    main_ = make_layer(main, ctx);
  }
  main_is_container_ = is_container(main);
  if (spec.children.size() > 1) {
    shortcut_ = make_layer(spec.children[1], ctx);
    shortcut_is_container_ = is_container(spec.children[1]);
  }
  // A shortcut that ends in a fused run (a projection's batch norm): the main branch's add is the only reader
  // of its output, so the run lends it from the gradient pool (forward gives it back).
  if (fused_add_main_ && shortcut_is_container_)
    if (auto* seq = dynamic_cast<Sequential*>(shortcut_.get()))
      if (auto* run = dynamic_cast<FusedBnRun*>(seq->last_layer()); run && !seq->adds_residual()) {
        run->lend_output();
        shortcut_lends_output_ = true;
        // Its apply, too, where it is a lone batch norm: the add normalises the convolution's output.
        if (ctx.options().shortcut_bn_in_add && run->defers_apply_to_add()) shortcut_apply_run_ = run;
      }
  // The run that reads dy first masks it by the following ReLU where this block applies that ReLU.
  if (applies_following_relu()) {
    FusedBnRun* main_run = fused_add_main_->residual_run();
    if (!shortcut_) {
      following_relu_mask_run_ = main_run;
    } else if (auto* seq = dynamic_cast<Sequential*>(shortcut_.get())) {
      if (auto* run = dynamic_cast<FusedBnRun*>(seq->last_layer()); run && !seq->adds_residual()) {
        run->set_following_relu_output(main_run);
        following_relu_mask_run_ = run;
      }
    }
  }
  // A shortcut convolution's bias is added in the main branch's fused pass instead of a pass of its own.
  if (fused_add_main_ && (shortcut_conv_ = dynamic_cast<Conv2d*>(shortcut_.get())) && shortcut_conv_->has_bias())
    shortcut_conv_->leave_bias_to_consumer();
  else
    shortcut_conv_ = nullptr;
}

const DeviceTensor& Residual::run_shortcut(const DeviceTensor& t, bool backward, Mode mode) {
  if (!shortcut_) return t;
  return timed(ctx_, spec_.children[1].name, backward, shortcut_is_container_, [&]() -> const DeviceTensor& {
    return backward ? shortcut_->backward(t) : shortcut_->forward(t, mode);
  });
}

const DeviceTensor& Residual::run_main(const DeviceTensor& t, bool backward, Mode mode) {
  return timed(ctx_, spec_.children[0].name, backward, main_is_container_, [&]() -> const DeviceTensor& {
    return backward ? main_->backward(t) : main_->forward(t, mode);
  });
}

const DeviceTensor& Residual::add(const DeviceTensor& a, const DeviceTensor& b, DeviceBuffer* buffer, DeviceTensor& out,
                                  bool backward) {
  return timed(ctx_, spec_.name + ".add", backward, false, [&]() -> const DeviceTensor& {
    out = buffer ? output_tensor(*buffer, a.shape(), ctx_) : gradient_tensor(a.shape(), ctx_);
    kernels::add(a.data, b.data, out.data, a.numel(), a.dtype(), ctx_.stream());
    return out;
  });
}

void Residual::bind(const ParamViews& views) {
  main_->bind(views);
  if (shortcut_)
    shortcut_->bind(views.advanced(count_elements(collect_params(spec_.children[0])),
                                   count_elements(collect_buffers(spec_.children[0]))));
}

void Residual::set_random_stream(uint64_t key, uint64_t step) {
  main_->set_random_stream(key, step);
  if (shortcut_) shortcut_->set_random_stream(key, step);
}

void Residual::set_first_sample(int64_t first) {
  main_->set_first_sample(first);
  if (shortcut_) shortcut_->set_first_sample(first);
}

const DeviceTensor& Residual::forward(const DeviceTensor& x, Mode mode) {
  if (fused_add_main_) {  // the main branch's last pass adds the shortcut
    if (shortcut_apply_run_) shortcut_apply_run_->defer_next_apply();
    const DeviceTensor& b = run_shortcut(x, false, mode);
    const bool applied_in_add = shortcut_apply_run_ && shortcut_apply_run_->deferred();  // b has no memory
    if (applied_in_add)
      fused_add_main_->set_residual_run(shortcut_apply_run_);
    else
      fused_add_main_->set_residual(&b, shortcut_conv_ ? shortcut_conv_->bias() : nullptr);
    y_ = run_main(x, false, mode);
    if (shortcut_lends_output_ && !applied_in_add) ctx_.release_gradient(b.data);  // read by the add, now queued
    return y_;
  }
  const DeviceTensor& a = run_main(x, false, mode);
  const DeviceTensor& b = run_shortcut(x, false, mode);
  if (a.shape() != b.shape())
    throw UserError("Residual '" + spec_.name + "': main branch gives " + a.shape().str() + " but shortcut gives " +
                    b.shape().str());
  return add(a, b, &y_buffer_, y_, false);
}

const DeviceTensor& Residual::backward(const DeviceTensor& dy) {
  if (!y_.data) fatal(layer_label(spec_) + ": backward before forward");
  // The shortcut first: its parameters come after the main branch's in the flat buffer, and backward must
  // visit parameters in reverse buffer order for Context::gradients_ready to hold.
  const DeviceTensor& db = run_shortcut(dy, true, Mode::Train);
  // The main branch's first dgrad adds into db: a projection's own buffer (a shortcut that hands dy back is
  // none), or dy itself where it may be written (the class comment).
  if (adds_in_dgrad() && (!shortcut_ || db.data != dy.data)) {
    grad_sum_conv_->add_next_input_gradient_to(db);
    return run_main(dy, true, Mode::Train);
  }
  const DeviceTensor& da = run_main(dy, true, Mode::Train);
  const DeviceTensor& dx = add(da, db, nullptr, dx_, true);
  // The branches' gradients, where they wrote their own (dy is the caller's to give back).
  if (da.data != dy.data) ctx_.release_gradient(da.data);
  if (db.data != dy.data && db.data != da.data) ctx_.release_gradient(db.data);
  return dx;
}

std::string Residual::fusion_report() const {
  std::string r = cuda::fusion_report(*main_) + (shortcut_ ? cuda::fusion_report(*shortcut_) : std::string());
  if (adds_in_dgrad())
    r += spec_.name + ": shortcut gradient added by " + spec_.children[0].children[0].name + "'s dgrad" +
         (shortcut_ ? "" : " in place") + kLayerKernelsRecord + "\n";
  if (shortcut_apply_run_ && shortcut_apply_run_->deferred())
    r += spec_.name + ": " + shortcut_apply_run_->batch_norm_name() + " applied in " +
         fused_add_main_->residual_run()->batch_norm_name() + "'s add" + kLayerKernelsRecord + "\n";
  if (const FusedBnRun* run = following_relu_mask_run(); run && run->asked_to_mask_following_relu())
    r += spec_.name + ": the following ReLU's gradient masked by " + run->batch_norm_name() + "'s backward" +
         kLayerKernelsRecord + "\n";
  if (const FusedBnRun* run = following_relu_mask_run(); run && run->paired_last_backward())
    r += spec_.name + ": " + run->batch_norm_name() + " and " + fused_add_main_->residual_run()->batch_norm_name() +
         ": backward as a pair" + kLayerKernelsRecord + "\n";
  return r;
}

std::string fusion_report(const Layer& root) {
  if (const auto* s = dynamic_cast<const Sequential*>(&root)) return s->fusion_report();
  if (const auto* r = dynamic_cast<const Residual*>(&root)) return r->fusion_report();
  if (const auto* run = dynamic_cast<const FusedBnRun*>(&root)) return run->fallback_note();
  return "";
}

}  // namespace sb::cuda
