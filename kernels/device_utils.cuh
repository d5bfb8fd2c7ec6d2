// Internal helpers shared by the kernels/*.cu files (not part of the kernel API): element-type
// conversions to and from fp32 registers, run-time DType -> C++ type dispatch, 16-byte vector packs,
// grid sizing for grid-stride loops, and warp reductions.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda_check.h"
#include "core/dtype.h"
#include "core/error.h"

namespace sb::kernels::detail {

// ---- element conversions (round to nearest even) ----
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// ---- run-time dtype dispatch: f(TypeTag<T>{}) with T the DType's element type ----
template <typename T>
struct TypeTag {
  using type = T;
};

template <typename F>
void dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::F32: f(TypeTag<float>{}); return;
    case DType::F16: f(TypeTag<__half>{}); return;
    case DType::BF16: f(TypeTag<__nv_bfloat16>{}); return;
  }
  fatal("kernels: unknown DType");
}

// ---- 16-byte vector packs: E elements per thread and iteration, loaded as 16-byte words ----
template <typename T, int E>
struct alignas(16) Pack {
  T v[E];
};
constexpr int kPackElems = 8;  // 16 bytes of fp16/bf16, 32 bytes (two 16-byte words) of fp32

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// ---- launch geometry ----
constexpr int kThreads = 256;

// Enough blocks of kThreads to fill the device (a few waves) without exceeding the work; kernels loop
// grid-stride over the rest, so any n works with one launch.
// The current device's multiprocessor count, asked once per thread and device (launches ask it often).
inline int multiprocessor_count() {
  static thread_local int cached_device = -1, cached_sms = 0;
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  if (device != cached_device) {
    CHECK_CUDA(cudaDeviceGetAttribute(&cached_sms, cudaDevAttrMultiProcessorCount, device));
    cached_device = device;
  }
  return cached_sms;
}

inline unsigned int grid_for(int64_t work_items, int threads = kThreads) {
  const int64_t wanted = (work_items + threads - 1) / threads;
  const int64_t cap = static_cast<int64_t>(multiprocessor_count()) * (2048 / threads) * 4;
  const int64_t blocks = wanted < 1 ? 1 : (wanted < cap ? wanted : cap);
  return static_cast<unsigned int>(blocks);
}

__device__ __forceinline__ int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_threads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// ---- warp reductions (all lanes get the result) ----
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

}  // namespace sb::kernels::detail
