// Normal random values in device memory for the CUDA benchmarks (bench_cuda_layers, layer_profile):
// `count` elements of `dtype`, seeded, drawn on the host in fp32 and rounded once to fp16/bf16.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/cuda_check.h"
#include "core/dtype.h"
#include "nn/cuda/device_buffer.h"

namespace sb::bench {

inline void fill_random(cuda::DeviceBuffer& buffer, int64_t count, DType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  const size_t n = static_cast<size_t>(count);
  if (dtype == DType::F32) {
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    CHECK_CUDA(cudaMemcpy(buffer.ensure(n * 4), v.data(), n * 4, cudaMemcpyHostToDevice));
    return;
  }
  std::vector<uint16_t> bits(n);
  for (uint16_t& b : bits) b = dtype == DType::BF16 ? float_to_bf16_bits(d(rng)) : float_to_fp16_bits(d(rng));
  CHECK_CUDA(cudaMemcpy(buffer.ensure(n * 2), bits.data(), n * 2, cudaMemcpyHostToDevice));
}

}  // namespace sb::bench
