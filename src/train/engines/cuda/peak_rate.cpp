#include "train/engines/cuda/peak_rate.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <optional>

#include "core/cuda_check.h"
#include "core/log.h"
#include "kernels/random_fill.h"
#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/device_buffer.h"
#include "train/engines/peak_rate_cache.h"

namespace sb {

namespace {

// Owns a cuBLAS handle for one measurement.
class CublasHandle {
 public:
  CublasHandle() { CHECK_CUBLAS(cublasCreate(&handle_)); }
  ~CublasHandle() {
    if (cublasDestroy(handle_) != CUBLAS_STATUS_SUCCESS) log_all("warning: cublasDestroy failed after the peak GEMM\n");
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

std::string cublas_version() {
  int major = 0, minor = 0, patch = 0;
  CHECK_CUBLAS(cublasGetProperty(MAJOR_VERSION, &major));
  CHECK_CUBLAS(cublasGetProperty(MINOR_VERSION, &minor));
  CHECK_CUBLAS(cublasGetProperty(PATCH_LEVEL, &patch));
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

double measure_gemm_tflops(DType dtype, bool tf32, int n) {
  const size_t elements = static_cast<size_t>(n) * static_cast<size_t>(n);
  cuda::DeviceBuffer a, b, c;
  a.ensure(elements * dtype_size(dtype));
  b.ensure(elements * dtype_size(dtype));
  c.ensure(elements * dtype_size(dtype));
  // Random operands, drawn on the device (no host loop or copy of n^2 values): zeros run faster than real
  // data on tensor cores.
  kernels::fill_uniform(a.data(), dtype, static_cast<int64_t>(elements), 1, -0.5f, 0.5f, nullptr);
  kernels::fill_uniform(b.data(), dtype, static_cast<int64_t>(elements), 2, -0.5f, 0.5f, nullptr);

  const CublasHandle handle;
  const cudaDataType type = dtype == DType::BF16 ? CUDA_R_16BF : dtype == DType::F16 ? CUDA_R_16F : CUDA_R_32F;
  const cublasComputeType_t compute = dtype == DType::F32 ? (tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F)
                                                          : CUBLAS_COMPUTE_32F;
  const float alpha = 1.0f, beta = 0.0f;
  auto gemm = [&] {
    CHECK_CUBLAS(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.data(), type, n, b.data(), type, n,
                              &beta, c.data(), type, n, compute, CUBLAS_GEMM_DEFAULT));
  };
  for (int i = 0; i < 3; ++i) gemm();
  const cuda::CudaEvent start = cuda::CudaEvent::create(), stop = cuda::CudaEvent::create();
  const int reps = 10;
  start.record(nullptr);
  for (int i = 0; i < reps; ++i) gemm();
  stop.record(nullptr);
  stop.synchronize();
  const float ms = cuda::CudaEvent::elapsed_ms(start, stop);
  const double flops = 2.0 * n * static_cast<double>(n) * n * reps;
  return flops / (ms * 1e-3) / 1e12;
}

std::string peak_rate_key(int device, DType dtype, bool tf32, int n) {
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  int clock_khz = 0;
  // The peak clock where the driver reports it; without it the other fields still name the card.
  const bool has_clock = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device) == cudaSuccess;
  if (!has_clock) (void)cudaGetLastError();  // not sticky: clear it so the next check does not see it
  int driver = 0, runtime = 0;
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  return std::string("gpu ") + prop.name + "\nsms " + std::to_string(prop.multiProcessorCount) +
         "\ncompute_capability " + std::to_string(prop.major) + "." + std::to_string(prop.minor) + "\nclock_khz " +
         (has_clock ? std::to_string(clock_khz) : std::string("unknown")) + "\ndriver " + std::to_string(driver) +
         "\ncuda_runtime " + std::to_string(runtime) + "\ncublas " + cublas_version() + "\ndtype " + dtype_name(dtype) +
         "\ntf32 " + (tf32 ? "on" : "off") + "\ngemm " + std::to_string(n) + "\n";
}

double peak_gemm_tflops(int device, DType dtype, bool tf32, const std::string& cache_folder) {
  if (cache_folder.empty()) return measure_gemm_tflops(dtype, tf32);
  const PeakRateCache cache(cache_folder, peak_rate_key(device, dtype, tf32));
  if (const std::optional<double> cached = cache.read()) return *cached;
  const double tflops = measure_gemm_tflops(dtype, tf32);
  cache.write(tflops);
  return tflops;
}

}  // namespace sb
