// Conv2d (stride, padding, optional bias) as im2col plus a BLAS GEMM.
#pragma once
#include <vector>

#include "nn/cpu/layer.h"
#include "nn/spec.h"

namespace sb::cpu {

template <typename T>
class Conv2d final : public Layer<T> {
 public:
  explicit Conv2d(const LayerSpec& spec);
  void bind(T* params, T* grads, T* buffers) override;
  const Tensor<T>& forward(const Tensor<T>& x, Mode mode) override;
  const Tensor<T>& backward(const Tensor<T>& dy) override;

 private:
  // A 1x1 kernel with stride 1 and no padding: the image itself is the im2col matrix.
  bool im2col_is_identity() const { return spec_.kernel == 1 && spec_.stride == 1 && spec_.pad == 0; }
  // The im2col matrix [in*k*k, out_h*out_w] of image n of the cached input.
  const T* columns_of(int64_t n);

  LayerSpec spec_;
  const T* weight_ = nullptr;  // [out, in, k, k], read as the matrix [out, in*k*k]
  const T* bias_ = nullptr;    // [out], or null without bias
  T* weight_grad_ = nullptr;
  T* bias_grad_ = nullptr;
  // The last forward's input; backward recomputes its im2col matrices from it rather than keeping
  // k*k copies of the whole batch.
  const Tensor<T>* x_ = nullptr;
  std::vector<T> columns_, column_grads_;  // one image's im2col matrix and its gradient
  Tensor<T> y_, dx_;
};

}  // namespace sb::cpu
