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

void BatchNorm2d::path_cannot_run(const std::string& what) const {
  const BatchNormPath path = ctx_.options().batchnorm_path;
  throw UserError("BatchNorm2d '" + spec_.name + "': batchnorm_path " + name_of(path) + " cannot run " +
                  what + " for input " + x_.shape().str() + " (" + dtype_name(ctx_.compute_dtype()) + ", " +
                  layout_name(ctx_.layout()) + "); " +
                  (path == BatchNormPath::Auto ? "it was the last path left"
                                               : "batchnorm_path auto takes the first path that runs (docs/cudnn.md)"));
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
  const bool relu_done = mode == Mode::Train ? forward_training(s) : forward_inference(s);
  if (relu_ && !relu_done) kernels::relu_forward(y_.data, y_.data, y_.numel(), y_.dtype(), ctx_.stream());
  return y_;
}

bool BatchNorm2d::forward_training(const BnShape& s) {
  const BatchNormPath path = ctx_.options().batchnorm_path;
  if (path == BatchNormPath::Pointwise)
    path_cannot_run("a Train-mode forward (the pointwise graph is Eval's affine map only; train with graph or "
                    "legacy)");
  const int64_t c = s.c;
  float* saved = saved_.ensure_as<float>(static_cast<size_t>(2 * c));
  float* running = views_.buffers;  // [2C]: mean, then variance
  float* next = running_out_.ensure_as<float>(static_cast<size_t>(2 * c));
  BnForwardTraining a;
  a.x = x_.data; a.y = y_.data; a.scale = views_.params; a.bias = views_.params + c;
  a.saved_mean = saved; a.saved_inv_std = saved + c;
  a.running_mean_in = running; a.running_var_in = running + c;
  a.running_mean_out = next; a.running_var_out = next + c;
  a.epsilon = &epsilon_; a.momentum = &momentum_;

  bool graph_ran = false, relu_done = false;
  if (path != BatchNormPath::Legacy) {
    if (relu_) {
      a.relu = true;
      relu_done = graph_ran = bn_forward_training_graph(ctx_, s, a);
    }
    // A forced graph path with a fused ReLU runs only the fused graph.
    if (!graph_ran && (path == BatchNormPath::Auto || !relu_)) {
      a.relu = false;
      graph_ran = bn_forward_training_graph(ctx_, s, a);
    }
    if (!graph_ran && path == BatchNormPath::Graph)
      path_cannot_run(std::string("the NORM_FORWARD training graph") + (relu_ ? " with the fused ReLU" : ""));
  }
  if (!graph_ran && !bn_forward_training_legacy(ctx_, s, a)) path_cannot_run("the legacy training forward");
  // The graph writes the next statistics beside the old ones (its inputs must not alias its outputs, and
  // autotuning runs it several times); they replace the old ones here. Mean and variance are adjacent in
  // the flat buffer, so it is one copy.
  CHECK_CUDA(cudaMemcpyAsync(running, next, static_cast<size_t>(2 * c) * sizeof(float), cudaMemcpyDeviceToDevice,
                             ctx_.stream()));
  return relu_done;
}

bool BatchNorm2d::forward_inference(const BnShape& s) {
  const BatchNormPath path = ctx_.options().batchnorm_path;
  const int64_t c = s.c;
  const float* scale = views_.params;
  const float* bias = views_.params + c;
  const float* running_mean = views_.buffers;
  const float* running_var = views_.buffers + c;
  auto legacy = [&] {
    if (!bn_forward_inference_legacy(ctx_, s, x_.data, y_.data, scale, bias, running_mean, running_var, spec_.eps))
      path_cannot_run("the legacy inference forward");
    return false;  // the ReLU is left to the kernel
  };
  if (path == BatchNormPath::Legacy) return legacy();
  const bool norm_graph = path == BatchNormPath::Auto || path == BatchNormPath::Graph;
  // Auto leaves the pointwise graph out: its engine compiles a kernel for each shape and batch on first
  // use (0.7-1.2 s each on an H200), where the legacy call's kernels come compiled (docs/cudnn.md).
  const bool affine_graph = path == BatchNormPath::Pointwise;
  BnForwardInference norm;
  if (norm_graph) {
    float* inv_std = saved_.ensure_as<float>(static_cast<size_t>(2 * c)) + c;
    kernels::bn_inverse_std(running_var, inv_std, c, epsilon_, ctx_.stream());
    norm.x = x_.data; norm.y = y_.data; norm.scale = scale; norm.bias = bias;
    norm.mean = running_mean; norm.inv_std = inv_std;
  }
  BnAffine affine;
  if (affine_graph) {
    float* coef = affine_.ensure_as<float>(static_cast<size_t>(2 * c));
    kernels::bn_inference_coefficients(scale, bias, running_mean, running_var, epsilon_, coef, coef + c, c,
                                       ctx_.stream());
    affine.x = x_.data; affine.y = y_.data; affine.a = coef; affine.b = coef + c;
  }
  // The path's graphs with the ReLU fused first, then (auto only) without. NORM_FORWARD's inference phase
  // has no engine with cuDNN 9.19 on Hopper (docs/cudnn.md): there auto runs the legacy call.
  for (const bool fuse : {true, false}) {
    if (fuse != relu_ && (fuse || path != BatchNormPath::Auto)) continue;
    norm.relu = affine.relu = fuse;
    if ((norm_graph && bn_forward_inference_graph(ctx_, s, norm)) || (affine_graph && bn_affine_graph(ctx_, s, affine)))
      return fuse;
  }
  if (path != BatchNormPath::Auto)
    path_cannot_run(std::string(path == BatchNormPath::Graph ? "the NORM_FORWARD inference graph"
                                                             : "the pointwise inference graph") +
                    (relu_ ? " with the fused ReLU" : ""));
  return legacy();
}

const DeviceTensor& BatchNorm2d::backward(const DeviceTensor& dy) {
  check_output_gradient(spec_, y_, dy);
  check_gradient_buffers(spec_, views_.grads);
  if (mode_ != Mode::Train) fatal(layer_label(spec_) + ": the CUDA path has no backward after an Eval-mode forward");
  check_activation(dy, ctx_, spec_, 4);
  const Shape& shape = y_.shape();
  const BnShape s{shape[0], shape[1], shape[2], shape[3]};
  const float* saved = static_cast<const float*>(saved_.data());
  dx_ = gradient_tensor(shape, ctx_);
  BnBackward a;
  a.x = x_.data; a.dy = dy.data; a.scale = views_.params;
  a.saved_mean = saved; a.saved_inv_std = saved + s.c;
  a.dscale = views_.grads; a.dbias = views_.grads + s.c;
  a.dx = dx_.data;
  // A Train-mode forward already refused the pointwise path.
  const BatchNormPath path = ctx_.options().batchnorm_path;
  const bool graph_ran = path != BatchNormPath::Legacy && bn_backward_graph(ctx_, s, a);
  if (!graph_ran && path == BatchNormPath::Graph) path_cannot_run("the NORM_BACKWARD graph");
  if (!graph_ran && !bn_backward_legacy(ctx_, s, a, spec_.eps)) path_cannot_run("the legacy backward");
  ctx_.gradients_ready(views_.grads);
  return dx_;
}

}  // namespace sb::cuda
