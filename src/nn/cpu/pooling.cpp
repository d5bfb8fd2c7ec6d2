#include "nn/cpu/pooling.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/window_extent.h"

namespace sb::cpu {
namespace {

// Sizes of one pooling pass over an N,C,H,W input (floor mode; `pad` cells on each side).
struct PoolGeometry {
  int64_t planes, in_h, in_w, out_h, out_w;
};

PoolGeometry pool_geometry(const char* layer, const Shape& in, int64_t kernel, int64_t stride, int64_t pad = 0) {
  if (in.rank() != 4) fatal(std::string(layer) + " needs an N x C x H x W input, got " + in.str());
  PoolGeometry g{in[0] * in[1], in[2], in[3], 0, 0};
  if (g.in_h + 2 * pad < kernel || g.in_w + 2 * pad < kernel)
    fatal(std::string(layer) + " input " + in.str() + " is smaller than its " + std::to_string(kernel) + "x" +
          std::to_string(kernel) + " window");
  g.out_h = window_extent(g.in_h, kernel, stride, pad);
  g.out_w = window_extent(g.in_w, kernel, stride, pad);
  return g;
}

void check_window(const LayerSpec& spec) {
  if (spec.kernel < 1 || spec.stride < 1)
    throw UserError(std::string(layer_kind_name(spec.kind)) + " '" + spec.name +
                    "' needs a kernel and a stride of at least 1");
}

void require_shape(const char* layer, const Shape& expected, const Shape& got) {
  if (expected != got)
    fatal(std::string(layer) + " backward got a gradient of shape " + got.str() + " but its output was " +
          expected.str());
}

}  // namespace

template <typename T>
MaxPool2d<T>::MaxPool2d(const LayerSpec& spec) : kernel_(spec.kernel), stride_(spec.stride), pad_(spec.pad) {
  check_window(spec);
  if (pad_ < 0 || 2 * pad_ > kernel_)
    throw UserError("MaxPool2d '" + spec.name + "': padding " + std::to_string(pad_) + " must lie in [0, kernel / 2]");
}

template <typename T>
const Tensor<T>& MaxPool2d<T>::forward(const Tensor<T>& x, Mode) {
  const PoolGeometry g = pool_geometry("MaxPool2d", x.shape(), kernel_, stride_, pad_);
  input_shape_ = x.shape();
  y_.resize(Shape{x.shape()[0], x.shape()[1], g.out_h, g.out_w});
  argmax_.resize(static_cast<size_t>(y_.numel()));
  // Padded cells hold -inf in PyTorch, so they never win: each window is clipped to the image, and its
  // first cell inside starts the search (pad <= kernel / 2 leaves at least one; without padding the
  // window is whole).
  int64_t o = 0;
  for (int64_t p = 0; p < g.planes; ++p) {
    const int64_t plane = p * g.in_h * g.in_w;
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      const int64_t top = oh * stride_ - pad_;
      const int64_t h0 = std::max<int64_t>(top, 0), h1 = std::min(top + kernel_, g.in_h);
      for (int64_t ow = 0; ow < g.out_w; ++ow, ++o) {
        const int64_t left = ow * stride_ - pad_;
        const int64_t w0 = std::max<int64_t>(left, 0), w1 = std::min(left + kernel_, g.in_w);
        int64_t best = plane + h0 * g.in_w + w0;
        for (int64_t h = h0; h < h1; ++h) {
          for (int64_t w = w0; w < w1; ++w) {
            // Strictly greater keeps the first maximum; a NaN wins, so that it propagates (as PyTorch).
            const T v = x[plane + h * g.in_w + w];
            if (v > x[best] || std::isnan(v)) best = plane + h * g.in_w + w;
          }
        }
        argmax_[static_cast<size_t>(o)] = best;
        y_[o] = x[best];
      }
    }
  }
  return y_;
}

template <typename T>
const Tensor<T>& MaxPool2d<T>::backward(const Tensor<T>& dy) {
  require_shape("MaxPool2d", y_.shape(), dy.shape());
  dx_.resize(input_shape_);
  dx_.fill(T(0));
  const int64_t n = dy.numel();
  // += because overlapping windows (stride < kernel) can pick the same input.
  for (int64_t o = 0; o < n; ++o) dx_[argmax_[static_cast<size_t>(o)]] += dy[o];
  return dx_;
}

template <typename T>
AvgPool2d<T>::AvgPool2d(const LayerSpec& spec) : kernel_(spec.kernel), stride_(spec.stride) {
  check_window(spec);
}

template <typename T>
const Tensor<T>& AvgPool2d<T>::forward(const Tensor<T>& x, Mode) {
  const PoolGeometry g = pool_geometry("AvgPool2d", x.shape(), kernel_, stride_);
  input_shape_ = x.shape();
  y_.resize(Shape{x.shape()[0], x.shape()[1], g.out_h, g.out_w});
  const T inv_area = T(1) / static_cast<T>(kernel_ * kernel_);  // no padding: every window is full
  int64_t o = 0;
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* plane = x.data() + p * g.in_h * g.in_w;
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow, ++o) {
        T sum = 0;
        for (int64_t kh = 0; kh < kernel_; ++kh) {
          const T* row = plane + (oh * stride_ + kh) * g.in_w + ow * stride_;
          for (int64_t kw = 0; kw < kernel_; ++kw) sum += row[kw];
        }
        y_[o] = sum * inv_area;
      }
    }
  }
  return y_;
}

template <typename T>
const Tensor<T>& AvgPool2d<T>::backward(const Tensor<T>& dy) {
  require_shape("AvgPool2d", y_.shape(), dy.shape());
  const PoolGeometry g = pool_geometry("AvgPool2d", input_shape_, kernel_, stride_);
  dx_.resize(input_shape_);
  dx_.fill(T(0));
  const T inv_area = T(1) / static_cast<T>(kernel_ * kernel_);
  int64_t o = 0;
  for (int64_t p = 0; p < g.planes; ++p) {
    T* plane = dx_.data() + p * g.in_h * g.in_w;
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow, ++o) {
        const T share = dy[o] * inv_area;
        for (int64_t kh = 0; kh < kernel_; ++kh) {
          T* row = plane + (oh * stride_ + kh) * g.in_w + ow * stride_;
          for (int64_t kw = 0; kw < kernel_; ++kw) row[kw] += share;
        }
      }
    }
  }
  return dx_;
}

template <typename T>
GlobalAvgPool<T>::GlobalAvgPool(const LayerSpec&) {}

template <typename T>
const Tensor<T>& GlobalAvgPool<T>::forward(const Tensor<T>& x, Mode) {
  const Shape& s = x.shape();
  if (s.rank() != 4) fatal("GlobalAvgPool needs an N x C x H x W input, got " + s.str());
  input_shape_ = s;
  y_.resize(Shape{s[0], s[1], 1, 1});
  const int64_t area = s[2] * s[3];
  const T inv_area = T(1) / static_cast<T>(area);
  for (int64_t p = 0; p < s[0] * s[1]; ++p) {
    const T* plane = x.data() + p * area;
    T sum = 0;
    for (int64_t i = 0; i < area; ++i) sum += plane[i];
    y_[p] = sum * inv_area;
  }
  return y_;
}

template <typename T>
const Tensor<T>& GlobalAvgPool<T>::backward(const Tensor<T>& dy) {
  require_shape("GlobalAvgPool", y_.shape(), dy.shape());
  dx_.resize(input_shape_);
  const int64_t area = input_shape_[2] * input_shape_[3];
  const T inv_area = T(1) / static_cast<T>(area);
  for (int64_t p = 0; p < dy.numel(); ++p) {
    const T share = dy[p] * inv_area;
    T* plane = dx_.data() + p * area;
    for (int64_t i = 0; i < area; ++i) plane[i] = share;
  }
  return dx_;
}

template class MaxPool2d<float>;
template class MaxPool2d<double>;
template class AvgPool2d<float>;
template class AvgPool2d<double>;
template class GlobalAvgPool<float>;
template class GlobalAvgPool<double>;

}  // namespace sb::cpu
