#include "train/cuda/peak_rate.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "core/cuda_check.h"
#include "kernels/elementwise.h"

namespace sb {

double measure_gemm_tflops(DType dtype, bool tf32, int n) {
  const size_t elements = static_cast<size_t>(n) * static_cast<size_t>(n);
  const size_t bytes = elements * dtype_size(dtype);
  void *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMalloc(&c, bytes));
  // Random operands: zeros run faster than real data on tensor cores.
  std::vector<float> host(elements);
  uint32_t state = 12345;
  for (float& x : host) {
    state = state * 1664525u + 1013904223u;
    x = static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
  }
  float* staging = nullptr;
  CHECK_CUDA(cudaMalloc(&staging, elements * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(staging, host.data(), elements * sizeof(float), cudaMemcpyHostToDevice));
  kernels::cast(staging, DType::F32, a, dtype, static_cast<int64_t>(elements), nullptr);
  kernels::cast(staging, DType::F32, b, dtype, static_cast<int64_t>(elements), nullptr);
  CHECK_CUDA(cudaFree(staging));

  cublasHandle_t handle = nullptr;
  CHECK_CUBLAS(cublasCreate(&handle));
  const cudaDataType type = dtype == DType::BF16 ? CUDA_R_16BF : dtype == DType::F16 ? CUDA_R_16F : CUDA_R_32F;
  const cublasComputeType_t compute = dtype == DType::F32 ? (tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F)
                                                          : CUBLAS_COMPUTE_32F;
  const float alpha = 1.0f, beta = 0.0f;
  auto gemm = [&] {
    CHECK_CUBLAS(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, type, n, b, type, n, &beta, c, type, n,
                              compute, CUBLAS_GEMM_DEFAULT));
  };
  for (int i = 0; i < 3; ++i) gemm();
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  const int reps = 10;
  CHECK_CUDA(cudaEventRecord(start));
  for (int i = 0; i < reps; ++i) gemm();
  CHECK_CUDA(cudaEventRecord(stop));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUBLAS(cublasDestroy(handle));
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(c));
  const double flops = 2.0 * n * static_cast<double>(n) * n * reps;
  return flops / (ms * 1e-3) / 1e12;
}

}  // namespace sb
