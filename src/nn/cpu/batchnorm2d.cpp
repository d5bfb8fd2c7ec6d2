#include "nn/cpu/batchnorm2d.h"

#include <cmath>

#include "core/error.h"

namespace sb::cpu {

namespace {
// Sums run in double even for T = float: a channel holds N*H*W values (tens of thousands), and the
// reference should not lose digits that the CUDA path is then compared against. Four partial sums let
// the additions overlap instead of each waiting for the previous one.
template <typename Term>
double sum_over(int64_t n, Term term) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += term(i);
    s1 += term(i + 1);
    s2 += term(i + 2);
    s3 += term(i + 3);
  }
  for (; i < n; ++i) s0 += term(i);
  return (s0 + s1) + (s2 + s3);
}
}  // namespace

template <typename T>
BatchNorm2d<T>::BatchNorm2d(const LayerSpec& spec) : spec_(spec) {
  if (spec.in <= 0) throw UserError("BatchNorm2d '" + spec.name + "' needs a positive channel count");
}

template <typename T>
void BatchNorm2d<T>::bind(T* params, T* grads, T* buffers) {
  const int64_t c = spec_.in;
  weight_ = params;
  bias_ = params ? params + c : nullptr;
  weight_grad_ = grads;
  bias_grad_ = grads ? grads + c : nullptr;
  running_mean_ = buffers;
  running_var_ = buffers ? buffers + c : nullptr;
}

template <typename T>
const Tensor<T>& BatchNorm2d<T>::forward(const Tensor<T>& x, Mode mode) {
  if (!weight_ || !running_mean_)
    fatal("BatchNorm2d '" + spec_.name + "': forward before bind (it needs parameters and running statistics)");
  const Shape shape = output_shape(spec_, x.shape());  // throws a UserError naming the layer on a bad shape
  const int64_t batch = shape[0], channels = shape[1], plane = shape[2] * shape[3];
  const int64_t count = batch * plane;
  if (mode == Mode::Train && count <= 1)
    throw UserError("BatchNorm2d '" + spec_.name + "' needs more than one value per channel in training, got input " +
                    x.shape().str());
  y_.resize(shape);
  x_hat_.resize(shape);
  inv_std_.assign(static_cast<size_t>(channels), 0.0);

  for (int64_t c = 0; c < channels; ++c) {
    double mean, var;
    if (mode == Mode::Train) {
      double sum = 0;
      for (int64_t n = 0; n < batch; ++n) {
        const T* in = x.data() + (n * channels + c) * plane;
        sum += sum_over(plane, [&](int64_t p) { return static_cast<double>(in[p]); });
      }
      mean = sum / static_cast<double>(count);
      double squares = 0;  // two passes: no cancellation when |mean| >> std
      for (int64_t n = 0; n < batch; ++n) {
        const T* in = x.data() + (n * channels + c) * plane;
        squares += sum_over(plane, [&](int64_t p) { return (in[p] - mean) * (in[p] - mean); });
      }
      var = squares / static_cast<double>(count);
      const double m = spec_.momentum;
      const double unbiased = squares / static_cast<double>(count - 1);
      running_mean_[c] = static_cast<T>((1 - m) * running_mean_[c] + m * mean);
      running_var_[c] = static_cast<T>((1 - m) * running_var_[c] + m * unbiased);
    } else {
      mean = running_mean_[c];
      var = running_var_[c];
    }
    const double inv_std = 1.0 / std::sqrt(var + spec_.eps);
    inv_std_[c] = inv_std;
    const double gamma = weight_[c], beta = bias_[c];
    for (int64_t n = 0; n < batch; ++n) {
      const int64_t at = (n * channels + c) * plane;
      const T* in = x.data() + at;
      T* hat = x_hat_.data() + at;
      T* out = y_.data() + at;
      for (int64_t p = 0; p < plane; ++p) {
        const double h = (in[p] - mean) * inv_std;
        hat[p] = static_cast<T>(h);
        out[p] = static_cast<T>(gamma * h + beta);
      }
    }
  }
  mode_ = mode;
  have_forward_ = true;
  return y_;
}

template <typename T>
const Tensor<T>& BatchNorm2d<T>::backward(const Tensor<T>& dy) {
  if (!have_forward_) fatal("BatchNorm2d '" + spec_.name + "': backward before forward");
  if (!weight_grad_) fatal("BatchNorm2d '" + spec_.name + "': backward without gradient buffers");
  if (dy.shape() != y_.shape())
    throw UserError("BatchNorm2d '" + spec_.name + "' got an output gradient of shape " + dy.shape().str() +
                    " for an output of shape " + y_.shape().str());
  const Shape& shape = y_.shape();
  const int64_t batch = shape[0], channels = shape[1], plane = shape[2] * shape[3];
  const double count = static_cast<double>(batch * plane);
  dx_.resize(shape);

  for (int64_t c = 0; c < channels; ++c) {
    double dbeta = 0, dgamma = 0;
    for (int64_t n = 0; n < batch; ++n) {
      const int64_t at = (n * channels + c) * plane;
      const T* g = dy.data() + at;
      const T* hat = x_hat_.data() + at;
      dbeta += sum_over(plane, [&](int64_t p) { return static_cast<double>(g[p]); });
      dgamma += sum_over(plane, [&](int64_t p) { return static_cast<double>(g[p]) * hat[p]; });
    }
    weight_grad_[c] = static_cast<T>(dgamma);
    bias_grad_[c] = static_cast<T>(dbeta);

    // Train: x_hat depends on every x of the channel through the batch mean and variance, which gives
    // dx = gamma*inv_std/count * (count*dy - sum(dy) - x_hat*sum(dy*x_hat)). Eval: a fixed affine map.
    const double scale = weight_[c] * inv_std_[c];
    const bool batch_stats = mode_ == Mode::Train;
    const double mean_term = batch_stats ? dbeta / count : 0.0;
    const double hat_term = batch_stats ? dgamma / count : 0.0;
    for (int64_t n = 0; n < batch; ++n) {
      const int64_t at = (n * channels + c) * plane;
      const T* g = dy.data() + at;
      const T* hat = x_hat_.data() + at;
      T* out = dx_.data() + at;
      for (int64_t p = 0; p < plane; ++p) out[p] = static_cast<T>(scale * (g[p] - mean_term - hat[p] * hat_term));
    }
  }
  return dx_;
}

template class BatchNorm2d<float>;
template class BatchNorm2d<double>;

}  // namespace sb::cpu
