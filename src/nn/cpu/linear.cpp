#include "nn/cpu/linear.h"

#include "core/error.h"
#include "nn/cpu/gemm.h"

namespace sb::cpu {

template <typename T>
Linear<T>::Linear(const LayerSpec& spec) : spec_(spec) {
  if (spec.in <= 0 || spec.out <= 0)
    throw UserError("Linear '" + spec.name + "' needs positive in and out features (got " + std::to_string(spec.in) +
                    " and " + std::to_string(spec.out) + ")");
}

template <typename T>
void Linear<T>::bind(T* params, T* grads, T* /*buffers*/) {
  const int64_t weight_size = spec_.out * spec_.in;
  weight_ = params;
  bias_ = params && spec_.bias ? params + weight_size : nullptr;
  weight_grad_ = grads;
  bias_grad_ = grads && spec_.bias ? grads + weight_size : nullptr;
}

template <typename T>
const Tensor<T>& Linear<T>::forward(const Tensor<T>& x, Mode /*mode*/) {
  if (!weight_) fatal("Linear '" + spec_.name + "': forward before bind");
  y_.resize(output_shape(spec_, x.shape()));  // throws a UserError naming the layer on a bad shape
  const int64_t n = x.shape()[0], in = spec_.in, out = spec_.out;
  gemm(Trans::No, Trans::Yes, n, out, in, T(1), x.data(), weight_, T(0), y_.data());
  if (bias_) {
    for (int64_t i = 0; i < n; ++i) {
      T* row = y_.data() + i * out;
      for (int64_t o = 0; o < out; ++o) row[o] += bias_[o];
    }
  }
  x_ = &x;
  return y_;
}

template <typename T>
const Tensor<T>& Linear<T>::backward(const Tensor<T>& dy) {
  if (!x_) fatal("Linear '" + spec_.name + "': backward before forward");
  if (!weight_grad_) fatal("Linear '" + spec_.name + "': backward without gradient buffers");
  if (dy.shape() != y_.shape())
    throw UserError("Linear '" + spec_.name + "' got an output gradient of shape " + dy.shape().str() +
                    " for an output of shape " + y_.shape().str());
  const Tensor<T>& x = *x_;
  const int64_t n = x.shape()[0], in = spec_.in, out = spec_.out;
  // dW[out, in] = dy^T [out, N] * x [N, in]
  gemm(Trans::Yes, Trans::No, out, in, n, T(1), dy.data(), x.data(), T(0), weight_grad_);
  if (bias_grad_) {
    for (int64_t o = 0; o < out; ++o) bias_grad_[o] = T(0);
    for (int64_t i = 0; i < n; ++i) {
      const T* row = dy.data() + i * out;
      for (int64_t o = 0; o < out; ++o) bias_grad_[o] += row[o];
    }
  }
  // dx[N, in] = dy [N, out] * W [out, in]
  dx_.resize(x.shape());
  gemm(Trans::No, Trans::No, n, in, out, T(1), dy.data(), weight_, T(0), dx_.data());
  return dx_;
}

template class Linear<float>;
template class Linear<double>;

}  // namespace sb::cpu
