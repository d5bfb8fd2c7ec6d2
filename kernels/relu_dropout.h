// The backward of ReLU followed by dropout, from the dropout's output alone: y = dropout(relu(x)) is
// positive exactly where the ReLU passed and the mask kept, so dx = y > 0 ? dy * scale : 0 needs neither
// the mask's draw nor the ReLU's input. Used where a GEMM's epilogue applied the ReLU (nn/cuda/linear.h).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

// scale: the dropout's 1 / (1 - p) (1 without dropout), applied as the dropout kernels apply it.
void relu_dropout_backward_from_output(const void* y, const void* dy, void* dx, int64_t n, float scale, DType dtype,
                                       cudaStream_t stream);

}  // namespace sb::kernels
