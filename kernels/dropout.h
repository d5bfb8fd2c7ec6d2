// Dropout with exactly the CPU layer's mask (src/nn/cpu/dropout.h): the element with logical NCHW index
// i = ((n*C + c)*H + h)*W + w is kept iff sb::philox_uniform_at(mask_key, step, i) >= p, and kept
// elements are scaled by 1/(1-p). The index is the logical one even when the tensor is stored NHWC, so
// that both layouts and the CPU reference drop the same elements. The mask is never stored: backward
// draws it again from (mask_key, step), which costs less than reading a mask from memory.
// mask_key comes from sb::dropout_mask_key(stream_key, layer_name); step is the training step.
// p in [0, 1]. p == 0 is the identity (a copy unless y aliases x). For 2-D tensors [n, c] pass h = w = 1.
// step_device (optional): read the step from device memory instead (it overrides `step`), so that a
// captured CUDA graph sees each step's value. first_element: the mask index of the tensor's element 0 (a
// multiple of 4; nonzero when the tensor is one replica's slice of a batch, src/train/engines/dp/).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

// y = dropout(x). y may alias x.
void dropout_forward(const void* x, void* y, int64_t n, int64_t c, int64_t h, int64_t w, Layout layout,
                     DType dtype, double p, uint64_t mask_key, uint64_t step, cudaStream_t stream,
                     const uint64_t* step_device = nullptr, uint64_t first_element = 0);

// dx = dy * mask / (1-p), with the forward's (mask_key, step). dx may alias dy.
void dropout_backward(const void* dy, void* dx, int64_t n, int64_t c, int64_t h, int64_t w, Layout layout,
                      DType dtype, double p, uint64_t mask_key, uint64_t step, cudaStream_t stream,
                      const uint64_t* step_device = nullptr, uint64_t first_element = 0);

}  // namespace sb::kernels
