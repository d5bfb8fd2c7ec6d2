// The second half of a matrix product split over K (nn/cuda/lt_matmul.h): the slices' fp32 partial
// products are added in slice order (the same bits every run, no atomics), then the epilogue that the split
// product left out is applied (the bias of each row, then ReLU) and the result written in the output's
// dtype. A product with few output tiles and a long K (mnist-cnn's fc1 in fp32: 64x128 outputs over
// K = 9216) runs on a few blocks unless it is split; the slices fill the GPU.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

// Column-major d[i + j * ldd] = epilogue(sum over p < slices of partials[p * m * n + i + j * m]) for i < m,
// j < n, the sum in fp32 in the order p = 0, 1, ...; epilogue: + bias[i] when bias is not null (m values
// in the `out` dtype), then max(0, .) when relu. slices >= 1, ldd >= m.
void sum_k_slices(const float* partials, int slices, int64_t m, int64_t n, void* d, int64_t ldd, DType out,
                  const void* bias, bool relu, cudaStream_t stream);

}  // namespace sb::kernels
