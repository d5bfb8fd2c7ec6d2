#include "nn/cuda/containers.h"

#include "core/error.h"
#include "kernels/elementwise.h"
#include "nn/cuda/activations.h"
#include "nn/cuda/batchnorm2d.h"
#include "nn/cuda/factory.h"
#include "nn/cuda/tensor_util.h"

namespace sb::cuda {

Sequential::Sequential(const LayerSpec& spec, Context& ctx) : child_specs_(spec.children) {
  for (const auto& c : child_specs_) children_.push_back(make_layer(c, ctx));
  if (!ctx.options().fuse_bn_relu) return;
  for (size_t i = 0; i + 1 < children_.size(); ++i) {
    if (child_specs_[i].kind != LayerKind::BatchNorm2d || child_specs_[i + 1].kind != LayerKind::ReLU) continue;
    static_cast<BatchNorm2d&>(*children_[i]).enable_fused_relu();
    static_cast<ReLU&>(*children_[i + 1]).set_applied_by_previous_layer();
  }
}

void Sequential::bind(const ParamViews& views) {
  ParamViews v = views;
  for (size_t i = 0; i < children_.size(); ++i) {
    children_[i]->bind(v);
    v = v.advanced(count_elements(collect_params(child_specs_[i])), count_elements(collect_buffers(child_specs_[i])));
  }
}

void Sequential::set_random_stream(uint64_t key, uint64_t step) {
  for (auto& c : children_) c->set_random_stream(key, step);
}

const DeviceTensor& Sequential::forward(const DeviceTensor& x, Mode mode) {
  const DeviceTensor* h = &x;
  for (auto& c : children_) h = &c->forward(*h, mode);
  return *h;
}

const DeviceTensor& Sequential::backward(const DeviceTensor& dy) {
  const DeviceTensor* g = &dy;
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) g = &(*it)->backward(*g);
  return *g;
}

Residual::Residual(const LayerSpec& spec, Context& ctx) : spec_(spec), ctx_(ctx) {
  main_ = make_layer(spec.children.at(0), ctx);
  if (spec.children.size() > 1) shortcut_ = make_layer(spec.children[1], ctx);
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

const DeviceTensor& Residual::forward(const DeviceTensor& x, Mode mode) {
  const DeviceTensor& a = main_->forward(x, mode);
  const DeviceTensor& b = shortcut_ ? shortcut_->forward(x, mode) : x;
  if (a.shape() != b.shape())
    throw UserError("Residual '" + spec_.name + "': main branch gives " + a.shape().str() + " but shortcut gives " +
                    b.shape().str());
  y_ = output_tensor(y_buffer_, a.shape(), ctx_);
  kernels::add(a.data, b.data, y_.data, a.numel(), a.dtype(), ctx_.stream());
  return y_;
}

const DeviceTensor& Residual::backward(const DeviceTensor& dy) {
  if (!y_.data) fatal("Residual '" + spec_.name + "': backward before forward");
  // The shortcut first: its parameters come after the main branch's in the flat buffer, and backward must
  // visit parameters in reverse buffer order for Context::gradients_ready to hold.
  const DeviceTensor& db = shortcut_ ? shortcut_->backward(dy) : dy;
  const DeviceTensor& da = main_->backward(dy);
  dx_ = output_tensor(dx_buffer_, da.shape(), ctx_);
  kernels::add(da.data, db.data, dx_.data, da.numel(), da.dtype(), ctx_.stream());
  return dx_;
}

}  // namespace sb::cuda
