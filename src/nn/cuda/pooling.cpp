#include "nn/cuda/pooling.h"

#include "core/error.h"
#include "kernels/pooling.h"
#include "nn/cuda/tensor_util.h"

namespace sb::cuda {
namespace {
kernels::PoolShape pool_shape(const LayerSpec& spec, const Shape& s) {
  return kernels::PoolShape{s[0], s[1], s[2], s[3], static_cast<int>(spec.kernel), static_cast<int>(spec.stride),
                            static_cast<int>(spec.pad)};
}
}  // namespace

Pool2d::Pool2d(const LayerSpec& spec, Context& ctx) : ParameterFreeLayer(spec, ctx) {
  const bool windowed = spec.kind == LayerKind::MaxPool2d || spec.kind == LayerKind::AvgPool2d;
  if (!windowed && spec.kind != LayerKind::GlobalAvgPool) fatal("Pool2d: not a pooling spec: " + spec.name);
  if (windowed && (spec.kernel <= 0 || spec.stride <= 0))
    throw UserError(std::string(layer_kind_name(spec.kind)) + " '" + spec.name + "' needs a positive kernel and stride");
  if (windowed && (spec.pad < 0 || 2 * spec.pad > spec.kernel || (spec.kind == LayerKind::AvgPool2d && spec.pad != 0)))
    throw UserError(std::string(layer_kind_name(spec.kind)) + " '" + spec.name + "': padding " + std::to_string(spec.pad) +
                    (spec.kind == LayerKind::AvgPool2d ? " is not supported for average pooling" : " must lie in [0, kernel / 2]"));
}

bool Pool2d::backward_reads_input() const {
  if (spec_.kind != LayerKind::MaxPool2d) return false;
  return !kernels::maxpool_keeps_positions_at_any_size(static_cast<int>(spec_.kernel), static_cast<int>(spec_.stride),
                                                       static_cast<int>(spec_.pad), ctx_.options().layout);
}

const DeviceTensor& Pool2d::forward(const DeviceTensor& x, Mode mode) {
  check_activation(x, ctx_, spec_, 4);
  const Shape out = output_shape(spec_, x.shape());
  x_ = x;
  y_ = output_tensor(y_buffer_, out, ctx_);
  const Shape& s = x.shape();
  const kernels::PoolShape ps = pool_shape(spec_, s);
  switch (spec_.kind) {
    case LayerKind::MaxPool2d: {
      // Training keeps the maxima's positions for backward where the kernels offer it.
      const int64_t bytes = mode == Mode::Train ? kernels::maxpool_positions_bytes(ps, x.layout(), x.dtype()) : 0;
      positions_ = bytes > 0 ? static_cast<uint8_t*>(positions_buffer_.ensure(static_cast<size_t>(bytes))) : nullptr;
      kernels::maxpool_forward(x.data, y_.data, ps, x.layout(), x.dtype(), ctx_.stream(), positions_);
      break;
    }
    case LayerKind::AvgPool2d: kernels::avgpool_forward(x.data, y_.data, ps, x.layout(), x.dtype(), ctx_.stream()); break;
    default:
      kernels::global_avgpool_forward(x.data, y_.data, s[0], s[1], s[2], s[3], x.layout(), x.dtype(), ctx_.stream());
  }
  return y_;
}

const DeviceTensor& Pool2d::backward(const DeviceTensor& dy) {
  check_output_gradient(spec_, y_, dy);
  check_activation(dy, ctx_, spec_, 4);
  dx_ = gradient_tensor(x_.shape(), ctx_);
  const Shape& s = x_.shape();
  const kernels::PoolShape ps = pool_shape(spec_, s);
  switch (spec_.kind) {
    case LayerKind::MaxPool2d:
      kernels::maxpool_backward(x_.data, dy.data, dx_.data, ps, x_.layout(), dy.dtype(), ctx_.stream(), positions_);
      break;
    case LayerKind::AvgPool2d:
      kernels::avgpool_backward(dy.data, dx_.data, ps, x_.layout(), dy.dtype(), ctx_.stream());
      break;
    default:
      kernels::global_avgpool_backward(dy.data, dx_.data, s[0], s[1], s[2], s[3], x_.layout(), dy.dtype(), ctx_.stream());
  }
  return dx_;
}

}  // namespace sb::cuda
