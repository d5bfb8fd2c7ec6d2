// Filling device memory with reproducible pseudo-random values, for operands whose contents only need to
// look like real data to the hardware (the peak GEMM measurement: tensor cores run faster on zeros).
// Not for training: dropout and augmentation draw from Philox (core/philox.h).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

// data[i] = a value in [lo, hi) hashed from (seed, i), rounded to `dtype`; the same seed gives the same values.
void fill_uniform(void* data, DType dtype, int64_t n, uint64_t seed, float lo, float hi, cudaStream_t stream);

}  // namespace sb::kernels
