// The passes after a convolution whose bias, ReLU, 2x2 max pool, dropout and flatten follow it (MNIST's
// conv2 block), fused: the forward reads the convolution's output once and writes the flattened, dropped
// pool output; the backward draws the dropout mask again, routes each window's gradient to its arg-max
// through the ReLU, writes the convolution's output gradient and the bias gradient's partial sums, which
// kernels/partial_sums.h adds up in block order (the same bits every run).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

// z: the convolution's output without its bias, [n, c, h, w] in `layout`; the pool output is [n, c, h/2, w/2]
// (rows and columns past an even size are outside every window, as in PyTorch), flattened in (c, h, w) order.
struct PoolDropoutShape {
  int64_t n = 0, c = 0, h = 0, w = 0;
};

// The dropout of the pool output: Philox at the logical NCHW index of the pool output, counted from
// first_element (kernels/dropout_mask.cuh). p == 0 (or eval) keeps everything unscaled.
struct PoolDropoutMask {
  double p = 0.0;
  uint64_t key = 0, step = 0;
  const uint64_t* step_device = nullptr;  // overrides step when not null
  uint64_t first_element = 0;
};

// Whether the kernels take c channels (a power of two up to 256: a block's threads share them out).
bool pool_dropout_supports(int64_t c);

// y[n, c*(h/2)*(w/2)] = dropout(maxpool2x2(relu(z + bias))). Each rounding of the separate passes is kept:
// z + bias is rounded to the dtype before the ReLU. bias: c fp32 values.
void bias_relu_pool_dropout_forward(const void* z, const float* bias, void* y, const PoolDropoutShape& s,
                                    const PoolDropoutMask& mask, Layout layout, DType dtype, cudaStream_t stream);

// How many fp32 values the backward's partial sums need.
int64_t pool_dropout_backward_workspace(const PoolDropoutShape& s);

// dz (same shape and layout as z) and dbias (c fp32, overwritten) for the flattened output gradient dy. The
// window's arg-max (first maximum wins) is recomputed from z and bias as the forward found it.
void bias_relu_pool_dropout_backward(const void* z, const float* bias, const void* dy, void* dz, float* dbias,
                                     float* workspace, const PoolDropoutShape& s, const PoolDropoutMask& mask,
                                     Layout layout, DType dtype, cudaStream_t stream);

}  // namespace sb::kernels
