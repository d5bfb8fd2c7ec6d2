// Elementwise kernels of the CUDA backend: activations, residual add, scaling, dtype casts, gradient
// accumulation into the fp32 flat buffer, layout transposes (one of them widening a filter gradient into
// the fp32 flat buffer) and bias-add. All memory-bound: one pass,
// 16-byte vector accesses where the pointers allow, grid-stride loops. Element types vary at run time
// (sb::DType: F32 = float, F16 = __half, BF16 = __nv_bfloat16); arithmetic is done in fp32 registers.
// Every function only enqueues work on `stream` (no host synchronisation) and checks the launch.
// Pointers are device pointers; n counts elements, never bytes.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

// y = max(x, 0). y may alias x.
void relu_forward(const void* x, void* y, int64_t n, DType dtype, cudaStream_t stream);

// dx = y > 0 ? dy : 0, from the forward's output y (y > 0 exactly when x > 0, so x need not be kept).
// dx may alias dy.
void relu_backward(const void* y, const void* dy, void* dx, int64_t n, DType dtype, cudaStream_t stream);

// out = a + b (the residual add). out may alias a or b.
void add(const void* a, const void* b, void* out, int64_t n, DType dtype, cudaStream_t stream);

// y = alpha * x. y may alias x (an in-place scale).
void scale(const void* x, void* y, float alpha, int64_t n, DType dtype, cudaStream_t stream);

// dst = src converted between fp32/fp16/bf16 (round to nearest even). Same dtype: a plain copy.
void cast(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n, cudaStream_t stream);

// dst = alpha * src, computed in fp32 and converted to dst's dtype (round to nearest even): the gradient
// averaging's 1/ranks applied while a bucket is copied into the all-reduce's buffer. dst may alias src when
// the dtypes match.
void scale_cast(const void* src, DType src_dtype, void* dst, DType dst_dtype, float alpha, int64_t n,
                cudaStream_t stream);

// dst (fp32) = src (any dtype) when accumulate is false, dst += src when true: takes a bf16/fp16
// gradient from cuDNN/cuBLAS into the fp32 flat gradient buffer in one pass (docs/cudnn.md: wgrad writes
// dw in the compute dtype, which is many times faster than fp32 dw).
void accumulate_into_f32(const void* src, DType src_dtype, float* dst, int64_t n, bool accumulate,
                         cudaStream_t stream);

// Layout transposes of a logical [n, c, h, w] tensor. Flatten under NHWC transposes to NCHW first, so
// that the flattened order is PyTorch's (C, H, W) order and a Linear's weights mean the same thing in
// both layouts. dst must not alias src.
void nchw_to_nhwc(const void* src, void* dst, int64_t n, int64_t c, int64_t h, int64_t w, DType dtype,
                  cudaStream_t stream);
void nhwc_to_nchw(const void* src, void* dst, int64_t n, int64_t c, int64_t h, int64_t w, DType dtype,
                  cudaStream_t stream);

// A convolution's filter gradient under NHWC into the fp32 flat gradient, in one pass:
// dst[k][c][r][s] (fp32) = src[k][r][s][c] (src_dtype), written, not accumulated. cuDNN writes dw as KRSC
// in the compute dtype (many times faster than fp32 dw, docs/cudnn.md); the flat buffer holds PyTorch's
// KCRS order. Replaces nhwc_to_nchw then accumulate_into_f32. dst must not alias src.
void krsc_to_kcrs_f32(const void* src, DType src_dtype, float* dst, int64_t k, int64_t c, int64_t r, int64_t s,
                      cudaStream_t stream);

// y[n, c, h, w] += bias[c] in place, for y stored in `layout` (a Linear's [n, c] output is the case
// h = w = 1, in either layout). bias may be fp32 (the master weights) or y's dtype. For when no fused
// cuDNN epilogue serves.
void bias_add(void* y, DType y_dtype, const void* bias, DType bias_dtype, int64_t n, int64_t c, int64_t h,
              int64_t w, Layout layout, cudaStream_t stream);

// dbias[c] (fp32) = sum over n, h, w of dy[n, c, h, w]; with accumulate, dbias += that sum instead.
// Deterministic (a fixed reduction order, no atomics).
void bias_backward(const void* dy, DType dy_dtype, float* dbias, int64_t n, int64_t c, int64_t h, int64_t w,
                   Layout layout, bool accumulate, cudaStream_t stream);

}  // namespace sb::kernels
