#include "nn/cuda/dropout.h"

#include "core/error.h"
#include "kernels/dropout.h"
#include "nn/cpu/dropout.h"
#include "nn/cuda/tensor_util.h"

namespace sb::cuda {
namespace {
// [n, c, h, w] of a 2-d or 4-d tensor, as the kernel indexes it.
void dims4(const Shape& s, int64_t d[4]) {
  d[0] = s[0];
  d[1] = s.rank() > 1 ? s[1] : 1;
  d[2] = s.rank() == 4 ? s[2] : 1;
  d[3] = s.rank() == 4 ? s[3] : 1;
  if (s.rank() != 2 && s.rank() != 4) {  // other ranks: the trailing dims folded into c
    d[1] = s.numel() / s[0];
    d[2] = d[3] = 1;
  }
}
}  // namespace

Dropout::Dropout(const LayerSpec& spec, Context& ctx)
    : spec_(spec), ctx_(ctx), mask_key_(dropout_mask_key(0, spec.name)) {
  if (!(spec.p >= 0.0 && spec.p < 1.0))
    throw UserError("dropout '" + spec.name + "' on the GPU needs a probability in [0, 1), got " + std::to_string(spec.p));
}

void Dropout::set_random_stream(uint64_t key, uint64_t step) {
  mask_key_ = dropout_mask_key(key, spec_.name);
  step_ = step;
}

const DeviceTensor& Dropout::forward(const DeviceTensor& x, Mode mode) {
  check_activation(x, ctx_, spec_, 0);
  identity_ = mode == Mode::Eval || spec_.p == 0.0;
  if (identity_) {
    y_ = x;
    return y_;
  }
  y_ = output_tensor(y_buffer_, x.shape(), ctx_);
  int64_t d[4];
  dims4(x.shape(), d);
  first_element_ = slice_mask_offset(spec_.name, x.shape(), first_sample_);
  kernels::dropout_forward(x.data, y_.data, d[0], d[1], d[2], d[3], x.layout(), x.dtype(), spec_.p, mask_key_, step_,
                           ctx_.stream(), ctx_.device_step(), first_element_);
  return y_;
}

const DeviceTensor& Dropout::backward(const DeviceTensor& dy) {
  check_output_gradient(spec_, y_, dy);
  if (identity_) {
    dx_ = dy;
    return dx_;
  }
  dx_ = gradient_tensor(dy.shape(), ctx_);
  int64_t d[4];
  dims4(dy.shape(), d);
  kernels::dropout_backward(dy.data, dx_.data, d[0], d[1], d[2], d[3], dy.layout(), dy.dtype(), spec_.p, mask_key_,
                            step_, ctx_.stream(), ctx_.device_step(), first_element_);
  return dx_;
}

}  // namespace sb::cuda
