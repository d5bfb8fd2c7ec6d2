// The second pass of our deterministic reductions: a first kernel writes one row of partial sums per
// block, and this adds the rows up in double in a fixed order (one warp per column), so the result has
// the same bits every run.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace sb::kernels {

// The most blocks (rows of partial sums) a first pass uses: enough to fill the GPU, few enough that the
// second pass reads little.
constexpr int64_t kMaxPartialSumRows = 256;

// out[j] = sum over b in 0..rows-1 of partials[b * cols + j], for j < cols (fp32 in and out).
void sum_partial_rows(const float* partials, int64_t rows, int64_t cols, float* out, cudaStream_t stream);

}  // namespace sb::kernels
