#include "nn/cpu/activations.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace sb::cpu {
namespace {
void require_same_shape(const char* layer, const Shape& expected, const Shape& got) {
  if (expected != got)
    fatal(std::string(layer) + " backward got a gradient of shape " + got.str() + " but its output was " +
          expected.str());
}
}  // namespace

template <typename T>
ReLU<T>::ReLU(const LayerSpec&) {}

template <typename T>
const Tensor<T>& ReLU<T>::forward(const Tensor<T>& x, Mode) {
  y_.resize(x.shape());
  const T* in = x.data();
  T* out = y_.data();
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] > T(0) ? in[i] : T(0);
  return y_;
}

template <typename T>
const Tensor<T>& ReLU<T>::backward(const Tensor<T>& dy) {
  require_same_shape("ReLU", y_.shape(), dy.shape());
  dx_.resize(dy.shape());
  const T* y = y_.data();
  const T* g = dy.data();
  T* out = dx_.data();
  const int64_t n = dy.numel();
  for (int64_t i = 0; i < n; ++i) out[i] = y[i] > T(0) ? g[i] : T(0);
  return dx_;
}

template <typename T>
Flatten<T>::Flatten(const LayerSpec&) {}

template <typename T>
const Tensor<T>& Flatten<T>::forward(const Tensor<T>& x, Mode) {
  if (x.shape().rank() < 2) fatal("Flatten needs an input of at least 2 dimensions, got " + x.shape().str());
  input_shape_ = x.shape();
  const int64_t n = x.shape()[0];
  y_.resize(Shape{n, x.numel() / n});
  std::copy(x.data(), x.data() + x.numel(), y_.data());
  return y_;
}

template <typename T>
const Tensor<T>& Flatten<T>::backward(const Tensor<T>& dy) {
  require_same_shape("Flatten", y_.shape(), dy.shape());
  dx_.resize(input_shape_);
  std::copy(dy.data(), dy.data() + dy.numel(), dx_.data());
  return dx_;
}

template <typename T>
LogSoftmax<T>::LogSoftmax(const LayerSpec&) {}

// y = x - max - log(sum exp(x - max)) per row: subtracting the max keeps exp from overflowing.
template <typename T>
const Tensor<T>& LogSoftmax<T>::forward(const Tensor<T>& x, Mode) {
  if (x.shape().rank() != 2) fatal("LogSoftmax needs an N x C input, got " + x.shape().str());
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  y_.resize(x.shape());
  for (int64_t r = 0; r < rows; ++r) {
    const T* in = x.data() + r * cols;
    T* out = y_.data() + r * cols;
    const T max = *std::max_element(in, in + cols);
    T sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(in[c] - max);
    const T shift = max + std::log(sum);
    for (int64_t c = 0; c < cols; ++c) out[c] = in[c] - shift;
  }
  return y_;
}

// dx = dy - softmax * sum(dy), row by row.
template <typename T>
const Tensor<T>& LogSoftmax<T>::backward(const Tensor<T>& dy) {
  require_same_shape("LogSoftmax", y_.shape(), dy.shape());
  const int64_t rows = dy.shape()[0], cols = dy.shape()[1];
  dx_.resize(dy.shape());
  for (int64_t r = 0; r < rows; ++r) {
    const T* g = dy.data() + r * cols;
    const T* y = y_.data() + r * cols;
    T* out = dx_.data() + r * cols;
    T total = 0;
    for (int64_t c = 0; c < cols; ++c) total += g[c];
    for (int64_t c = 0; c < cols; ++c) out[c] = g[c] - std::exp(y[c]) * total;
  }
  return dx_;
}

template class ReLU<float>;
template class ReLU<double>;
template class Flatten<float>;
template class Flatten<double>;
template class LogSoftmax<float>;
template class LogSoftmax<double>;

}  // namespace sb::cpu
