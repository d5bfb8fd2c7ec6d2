#include "nn/cpu/conv2d.h"

#include <algorithm>

#include "core/error.h"
#include "nn/cpu/gemm.h"

namespace sb::cpu {
namespace {

// The geometry of one image's convolution.
struct ConvGeometry {
  int64_t channels, height, width, kernel, stride, pad, out_h, out_w;
  int64_t rows() const { return channels * kernel * kernel; }  // of the im2col matrix
  int64_t cols() const { return out_h * out_w; }
};

// The output positions o in [first, last) whose input index o*stride + offset lies in [0, size), so
// that the loops below need no bounds test per element (positions outside read the zero padding).
struct Span {
  int64_t first, last;
};
Span inside(int64_t offset, int64_t stride, int64_t size, int64_t out_size) {
  const int64_t first = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t last = size - 1 - offset < 0 ? 0 : (size - 1 - offset) / stride + 1;
  const int64_t f = std::min(first, out_size), l = std::min(last, out_size);
  return {f, std::max(f, l)};
}

// col[(c*k + i)*k + j][oh*out_w + ow] = x[c][oh*stride - pad + i][ow*stride - pad + j], zero outside.
template <typename T>
void im2col(const T* x, const ConvGeometry& g, T* col) {
  for (int64_t c = 0; c < g.channels; ++c) {
    const T* plane = x + c * g.height * g.width;
    for (int64_t i = 0; i < g.kernel; ++i) {
      const Span rows = inside(i - g.pad, g.stride, g.height, g.out_h);
      for (int64_t j = 0; j < g.kernel; ++j) {
        const Span cols = inside(j - g.pad, g.stride, g.width, g.out_w);
        T* out = col + ((c * g.kernel + i) * g.kernel + j) * g.cols();
        std::fill(out, out + rows.first * g.out_w, T(0));
        for (int64_t oh = rows.first; oh < rows.last; ++oh) {
          T* out_row = out + oh * g.out_w;
          const T* in_row = plane + (oh * g.stride - g.pad + i) * g.width;
          std::fill(out_row, out_row + cols.first, T(0));
          for (int64_t ow = cols.first; ow < cols.last; ++ow) out_row[ow] = in_row[ow * g.stride + j - g.pad];
          std::fill(out_row + cols.last, out_row + g.out_w, T(0));
        }
        std::fill(out + rows.last * g.out_w, out + g.cols(), T(0));
      }
    }
  }
}

// The adjoint of im2col: dx = sum of each column entry back into the input pixel it was read from.
template <typename T>
void col2im(const T* col, const ConvGeometry& g, T* dx) {
  std::fill(dx, dx + g.channels * g.height * g.width, T(0));
  for (int64_t c = 0; c < g.channels; ++c) {
    T* plane = dx + c * g.height * g.width;
    for (int64_t i = 0; i < g.kernel; ++i) {
      const Span rows = inside(i - g.pad, g.stride, g.height, g.out_h);
      for (int64_t j = 0; j < g.kernel; ++j) {
        const Span cols = inside(j - g.pad, g.stride, g.width, g.out_w);
        const T* in = col + ((c * g.kernel + i) * g.kernel + j) * g.cols();
        for (int64_t oh = rows.first; oh < rows.last; ++oh) {
          const T* in_row = in + oh * g.out_w;
          T* out_row = plane + (oh * g.stride - g.pad + i) * g.width;
          for (int64_t ow = cols.first; ow < cols.last; ++ow) out_row[ow * g.stride + j - g.pad] += in_row[ow];
        }
      }
    }
  }
}

ConvGeometry geometry(const LayerSpec& spec, const Shape& x, const Shape& y) {
  return {x[1], x[2], x[3], spec.kernel, spec.stride, spec.pad, y[2], y[3]};
}

}  // namespace

template <typename T>
Conv2d<T>::Conv2d(const LayerSpec& spec) : spec_(spec) {
  if (spec.in <= 0 || spec.out <= 0 || spec.kernel <= 0 || spec.stride <= 0 || spec.pad < 0)
    throw UserError("Conv2d '" + spec.name + "' needs positive channels, kernel and stride and a non-negative pad" +
                    " (got in " + std::to_string(spec.in) + ", out " + std::to_string(spec.out) + ", kernel " +
                    std::to_string(spec.kernel) + ", stride " + std::to_string(spec.stride) + ", pad " +
                    std::to_string(spec.pad) + ")");
}

template <typename T>
void Conv2d<T>::bind(T* params, T* grads, T* /*buffers*/) {
  const int64_t weight_size = conv_weight_count(spec_);
  weight_ = params;
  bias_ = params && spec_.bias ? params + weight_size : nullptr;
  weight_grad_ = grads;
  bias_grad_ = grads && spec_.bias ? grads + weight_size : nullptr;
}

template <typename T>
const T* Conv2d<T>::columns_of(int64_t n) {
  const ConvGeometry g = geometry(spec_, x_->shape(), y_.shape());
  const T* image = x_->data() + n * g.channels * g.height * g.width;
  if (im2col_is_identity()) return image;
  columns_.resize(static_cast<size_t>(g.rows() * g.cols()));
  im2col(image, g, columns_.data());
  return columns_.data();
}

template <typename T>
const Tensor<T>& Conv2d<T>::forward(const Tensor<T>& x, Mode /*mode*/) {
  if (!weight_) fatal("Conv2d '" + spec_.name + "': forward before bind");
  y_.resize(output_shape(spec_, x.shape()));  // throws a UserError naming the layer on a bad shape
  x_ = &x;
  const ConvGeometry g = geometry(spec_, x.shape(), y_.shape());
  const int64_t batch = x.shape()[0], out = spec_.out;
  for (int64_t n = 0; n < batch; ++n) {
    T* y = y_.data() + n * out * g.cols();
    // y_n [out, oh*ow] = W [out, in*k*k] * col_n [in*k*k, oh*ow]
    gemm(Trans::No, Trans::No, out, g.cols(), g.rows(), T(1), weight_, columns_of(n), T(0), y);
    if (bias_)
      for (int64_t o = 0; o < out; ++o) {
        T* plane = y + o * g.cols();
        for (int64_t p = 0; p < g.cols(); ++p) plane[p] += bias_[o];
      }
  }
  return y_;
}

template <typename T>
const Tensor<T>& Conv2d<T>::backward(const Tensor<T>& dy) {
  if (!x_) fatal("Conv2d '" + spec_.name + "': backward before forward");
  if (!weight_grad_) fatal("Conv2d '" + spec_.name + "': backward without gradient buffers");
  if (dy.shape() != y_.shape())
    throw UserError("Conv2d '" + spec_.name + "' got an output gradient of shape " + dy.shape().str() +
                    " for an output of shape " + y_.shape().str());
  const ConvGeometry g = geometry(spec_, x_->shape(), y_.shape());
  const int64_t batch = x_->shape()[0], out = spec_.out;
  const int64_t image_size = g.channels * g.height * g.width;
  dx_.resize(x_->shape());
  if (batch == 0) std::fill(weight_grad_, weight_grad_ + out * g.rows(), T(0));
  if (!im2col_is_identity()) column_grads_.resize(static_cast<size_t>(g.rows() * g.cols()));
  for (int64_t n = 0; n < batch; ++n) {
    const T* dy_n = dy.data() + n * out * g.cols();
    T* dx_n = dx_.data() + n * image_size;
    // dW [out, in*k*k] (+)= dy_n [out, oh*ow] * col_n^T; the first image overwrites.
    gemm(Trans::No, Trans::Yes, out, g.rows(), g.cols(), T(1), dy_n, columns_of(n), n == 0 ? T(0) : T(1),
         weight_grad_);
    // dcol [in*k*k, oh*ow] = W^T * dy_n, then scattered back onto the image.
    if (im2col_is_identity()) {
      gemm(Trans::Yes, Trans::No, g.rows(), g.cols(), out, T(1), weight_, dy_n, T(0), dx_n);
    } else {
      gemm(Trans::Yes, Trans::No, g.rows(), g.cols(), out, T(1), weight_, dy_n, T(0), column_grads_.data());
      col2im(column_grads_.data(), g, dx_n);
    }
  }
  if (bias_grad_) {
    std::fill(bias_grad_, bias_grad_ + out, T(0));
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t o = 0; o < out; ++o) {
        const T* plane = dy.data() + (n * out + o) * g.cols();
        T sum = T(0);
        for (int64_t p = 0; p < g.cols(); ++p) sum += plane[p];
        bias_grad_[o] += sum;
      }
  }
  return dx_;
}

template class Conv2d<float>;
template class Conv2d<double>;

}  // namespace sb::cpu
