// The per-channel coefficients of batch-norm inference, which the cuDNN graphs of src/nn/cuda/bn_ops.h
// take as inputs: 1/sqrt(var + eps) for the NORM_FORWARD inference graph, or the affine a, b of the
// pointwise graph. All fp32, C elements each.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::kernels {

// inv_std[i] = 1/sqrt(var[i] + eps) for i < c.
void bn_inverse_std(const float* var, float* inv_std, int64_t c, float eps, cudaStream_t stream);

// a = scale / sqrt(var + eps), b = bias - mean * a.
void bn_inference_coefficients(const float* scale, const float* bias, const float* mean, const float* var, float eps,
                               float* a, float* b, int64_t c, cudaStream_t stream);

}  // namespace sb::kernels
