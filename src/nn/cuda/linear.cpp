#include "nn/cuda/linear.h"

#include <cublas_v2.h>

#include "core/cuda_check.h"
#include "core/error.h"
#include "kernels/elementwise.h"
#include "nn/cuda/tensor_util.h"

namespace sb::cuda {
namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
  }
  fatal("linear: unknown dtype");
}

// Column-major C[m x n] = op(A) op(B) with A and B in the compute dtype and C in c_type; fp32 accumulation.
void gemm(Context& ctx, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, const void* a,
          int64_t lda, const void* b, int64_t ldb, void* c, cudaDataType_t c_type, int64_t ldc) {
  const DType dt = ctx.compute_dtype();
  const cublasComputeType_t compute =
      dt == DType::F32 && ctx.tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float alpha = 1.0f, beta = 0.0f;
  CHECK_CUBLAS(cublasGemmEx(ctx.cublas(), ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), &alpha,
                            a, cuda_type(dt), static_cast<int>(lda), b, cuda_type(dt), static_cast<int>(ldb), &beta, c,
                            c_type, static_cast<int>(ldc), compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

Linear::Linear(const LayerSpec& spec, Context& ctx) : spec_(spec), ctx_(ctx) {
  if (spec.in <= 0 || spec.out <= 0) throw UserError("Linear '" + spec.name + "' needs positive sizes");
}

// cuBLAS is column-major: a row-major [rows, cols] matrix is its column-major [cols x rows] transpose.
// y[N, out] = x[N, in] W[out, in]^T becomes y^T[out x N] = op_T(W as [in x out], ld in) * (x as [in x N]).
const DeviceTensor& Linear::forward(const DeviceTensor& x, Mode) {
  if (!views_.compute_params) fatal("Linear '" + spec_.name + "': forward before bind");
  check_activation(x, ctx_, spec_, 2);
  const Shape out = output_shape(spec_, x.shape());
  x_ = x;
  y_ = output_tensor(y_buffer_, out, ctx_);
  const int64_t n = out[0];
  gemm(ctx_, CUBLAS_OP_T, CUBLAS_OP_N, spec_.out, n, spec_.in, views_.compute_params, spec_.in, x.data, spec_.in,
       y_.data, cuda_type(ctx_.compute_dtype()), spec_.out);
  if (spec_.bias)
    kernels::bias_add(y_.data, y_.dtype(), views_.params + spec_.out * spec_.in, DType::F32, n, spec_.out, 1, 1,
                      Layout::NCHW, ctx_.stream());
  return y_;
}

const DeviceTensor& Linear::backward(const DeviceTensor& dy) {
  if (!x_.data) fatal("Linear '" + spec_.name + "': backward before forward");
  if (!views_.grads) fatal("Linear '" + spec_.name + "': backward without gradient buffers");
  if (dy.shape() != y_.shape())
    throw UserError("Linear '" + spec_.name + "' got an output gradient of shape " + dy.shape().str() +
                    " for an output of shape " + y_.shape().str());
  check_activation(dy, ctx_, spec_, 2);
  const int64_t n = y_.shape()[0];
  dx_ = output_tensor(dx_buffer_, x_.shape(), ctx_);
  // dx[N, in] = dy[N, out] W[out, in]: column-major dx^T[in x N] = W^T[in x out] dy^T[out x N].
  gemm(ctx_, CUBLAS_OP_N, CUBLAS_OP_N, spec_.in, n, spec_.out, views_.compute_params, spec_.in, dy.data, spec_.out,
       dx_.data, cuda_type(ctx_.compute_dtype()), spec_.in);
  // dW[out, in] = dy^T x: column-major dW^T[in x out] = x^T[in x N] dy[N x out], written in fp32.
  gemm(ctx_, CUBLAS_OP_N, CUBLAS_OP_T, spec_.in, spec_.out, n, x_.data, spec_.in, dy.data, spec_.out, views_.grads,
       CUDA_R_32F, spec_.in);
  if (spec_.bias)
    kernels::bias_backward(dy.data, dy.dtype(), views_.grads + spec_.out * spec_.in, n, spec_.out, 1, 1, Layout::NCHW,
                           /*accumulate=*/false, ctx_.stream());
  ctx_.gradients_ready(views_.grads);
  return dx_;
}

}  // namespace sb::cuda
