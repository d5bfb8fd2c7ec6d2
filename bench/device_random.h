// Random values in device memory for the CUDA benchmarks (bench_cuda_layers, bench_bn_folding): `count`
// elements of `dtype`, seeded, uniform with unit variance (in [-sqrt 3, sqrt 3)), hashed on the device and
// rounded once to fp16/bf16. Drawn on the device, because Google Benchmark calls a benchmark's function several
// times while it settles the iteration count, and a host generator took seconds a call for ResNet-50's
// activations.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/cuda_check.h"
#include "core/dtype.h"
#include "kernels/random_fill.h"
#include "nn/cuda/device_buffer.h"

namespace sb::bench {

inline void fill_random(cuda::DeviceBuffer& buffer, int64_t count, DType dtype, uint64_t seed) {
  constexpr float kBound = 1.7320508f;  // sqrt(3): unit variance
  void* data = buffer.ensure(static_cast<size_t>(count) * dtype_size(dtype));
  kernels::fill_uniform(data, dtype, count, seed, -kBound, kBound, nullptr);
  CHECK_CUDA(cudaDeviceSynchronize());
}

}  // namespace sb::bench
