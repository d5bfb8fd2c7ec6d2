#include "nn/cuda/linear.h"

#include <cublas_v2.h>

#include "core/cuda_check.h"
#include "core/error.h"
#include "kernels/dropout.h"
#include "kernels/elementwise.h"
#include "kernels/relu_dropout.h"
#include "nn/cpu/dropout.h"
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
// Runs on `stream`, the compute stream or the weight-gradient stream (each has its own handle).
void gemm(Context& ctx, cudaStream_t stream, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n,
          int64_t k, const void* a, int64_t lda, const void* b, int64_t ldb, void* c, cudaDataType_t c_type,
          int64_t ldc) {
  const DType dt = ctx.compute_dtype();
  const cublasComputeType_t compute =
      dt == DType::F32 && ctx.tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float alpha = 1.0f, beta = 0.0f;
  CHECK_CUBLAS(cublasGemmEx(ctx.cublas_for(stream), ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), &alpha,
                            a, cuda_type(dt), static_cast<int>(lda), b, cuda_type(dt), static_cast<int>(ldb), &beta, c,
                            c_type, static_cast<int>(ldc), compute, CUBLAS_GEMM_DEFAULT));
}

cublasLtEpilogue_t forward_epilogue(bool bias, bool relu) {
  if (bias) return relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  return relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
}

}  // namespace

Linear::Linear(const LayerSpec& spec, Context& ctx) : spec_(spec), ctx_(ctx) {
  if (spec.in <= 0 || spec.out <= 0) throw UserError("Linear '" + spec.name + "' needs positive sizes");
}

void Linear::fuse_relu(const LayerSpec* dropout) {
  relu_ = true;
  has_dropout_ = dropout != nullptr;
  if (!dropout) return;
  if (!(dropout->p >= 0.0 && dropout->p < 1.0))
    throw UserError("dropout '" + dropout->name + "' on the GPU needs a probability in [0, 1), got " +
                    std::to_string(dropout->p));
  dropout_ = *dropout;
  mask_key_ = dropout_mask_key(0, dropout_.name);
}

void Linear::set_random_stream(uint64_t key, uint64_t step) {
  if (!has_dropout_) return;
  mask_key_ = dropout_mask_key(key, dropout_.name);
  step_ = step;
}

float Linear::dropout_scale() const { return dropped_ ? static_cast<float>(1.0 / (1.0 - dropout_.p)) : 1.0f; }

// cuBLAS is column-major: a row-major [rows, cols] matrix is its column-major [cols x rows] transpose.
// y[N, out] = x[N, in] W[out, in]^T becomes y^T[out x N] = op_T(W as [in x out], ld in) * (x as [in x N]).
void Linear::gemm_forward(const DeviceTensor& x, int64_t n) {
  const DType dt = ctx_.compute_dtype();
  // The epilogue's bias is in the output's dtype: the compute copy, which follows the weights as the master
  // does.
  const char* weights = static_cast<const char*>(views_.compute_params);
  const void* bias = spec_.bias ? weights + spec_.out * spec_.in * dtype_size(dt) : nullptr;
  const LtMatmulShape shape{CUBLAS_OP_T, CUBLAS_OP_N, spec_.out, n, spec_.in, spec_.in, spec_.in, spec_.out, dt, dt,
                            forward_epilogue(spec_.bias, relu_)};
  if (lt_.run(ctx_, shape, views_.compute_params, x.data, y_.data, bias, ctx_.stream())) return;
  gemm(ctx_, ctx_.stream(), CUBLAS_OP_T, CUBLAS_OP_N, spec_.out, n, spec_.in, views_.compute_params, spec_.in, x.data, spec_.in,
       y_.data, cuda_type(dt), spec_.out);
  if (spec_.bias)
    kernels::bias_add(y_.data, y_.dtype(), views_.params + spec_.out * spec_.in, DType::F32, n, spec_.out, 1, 1,
                      Layout::NCHW, ctx_.stream());
  if (relu_) kernels::relu_forward(y_.data, y_.data, y_.numel(), y_.dtype(), ctx_.stream());
}

const DeviceTensor& Linear::forward(const DeviceTensor& x, Mode mode) {
  if (!views_.compute_params) fatal("Linear '" + spec_.name + "': forward before bind");
  check_activation(x, ctx_, spec_, 2);
  const Shape out = output_shape(spec_, x.shape());
  x_ = x;
  y_ = output_tensor(y_buffer_, out, ctx_);
  const int64_t n = out[0];
  gemm_forward(x, n);
  dropped_ = has_dropout_ && mode == Mode::Train && dropout_.p > 0.0;
  if (dropped_)  // in place: each element is read and written by the same thread
    kernels::dropout_forward(y_.data, y_.data, n, spec_.out, 1, 1, Layout::NCHW, y_.dtype(), dropout_.p, mask_key_,
                             step_, ctx_.stream(), ctx_.device_step(),
                             slice_mask_offset(dropout_.name, out, first_sample_));
  return y_;
}

const DeviceTensor& Linear::backward(const DeviceTensor& dy) {
  check_output_gradient(spec_, y_, dy);
  check_gradient_buffers(spec_, views_.grads);
  check_activation(dy, ctx_, spec_, 2);
  const DType dt = ctx_.compute_dtype();
  const int64_t n = y_.shape()[0];
  const DeviceTensor* g = &dy;
  if (relu_) {  // the gradient at the GEMM's output: dy where the (dropped) output is positive, scaled
    dz_ = output_tensor(dz_buffer_, y_.shape(), ctx_);
    kernels::relu_dropout_backward_from_output(y_.data, dy.data, dz_.data, dy.numel(), dropout_scale(), dt,
                                               ctx_.stream());
    g = &dz_;
  }
  // The weight gradient reads x and g, both queued: it may run beside dgrad, which the layers below wait for.
  const cudaStream_t wgrad_stream = ctx_.begin_weight_gradient();
  dx_ = gradient_tensor(x_.shape(), ctx_);
  // dx[N, in] = dy[N, out] W[out, in]: column-major dx^T[in x N] = W^T[in x out] dy^T[out x N].
  const LtMatmulShape dgrad{CUBLAS_OP_N, CUBLAS_OP_N, spec_.in, n, spec_.out, spec_.in, spec_.out, spec_.in, dt, dt,
                            CUBLASLT_EPILOGUE_DEFAULT};
  if (!lt_.run(ctx_, dgrad, views_.compute_params, g->data, dx_.data, nullptr, ctx_.stream()))
    gemm(ctx_, ctx_.stream(), CUBLAS_OP_N, CUBLAS_OP_N, spec_.in, n, spec_.out, views_.compute_params, spec_.in,
         g->data, spec_.out, dx_.data, cuda_type(dt), spec_.in);
  // dW[out, in] = dy^T x: column-major dW^T[in x out] = x^T[in x N] dy[N x out], written in fp32; the
  // epilogue's bias gradient sums B (dy) over the GEMM's k (the batch).
  float* dbias = spec_.bias ? views_.grads + spec_.out * spec_.in : nullptr;
  const LtMatmulShape wgrad{CUBLAS_OP_N, CUBLAS_OP_T, spec_.in, spec_.out, n, spec_.in, spec_.out, spec_.in, dt,
                            DType::F32, spec_.bias ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_DEFAULT};
  if (!lt_wgrad_.run(ctx_, wgrad, x_.data, g->data, views_.grads, dbias, wgrad_stream)) {
    gemm(ctx_, wgrad_stream, CUBLAS_OP_N, CUBLAS_OP_T, spec_.in, spec_.out, n, x_.data, spec_.in, g->data, spec_.out,
         views_.grads, CUDA_R_32F, spec_.in);
    if (spec_.bias)
      kernels::bias_backward(g->data, dt, dbias, n, spec_.out, 1, 1, Layout::NCHW, /*accumulate=*/false, wgrad_stream);
  }
  ctx_.gradients_ready(views_.grads);
  return dx_;
}

}  // namespace sb::cuda
