// Error-check macros for the CUDA libraries, in the style of core/check.h: a failed call prints the
// rank, host, file, line, call and the library's message, runs the abort hooks (ncclCommAbort) and
// aborts the whole job. Include only from CUDA-backend sources.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#if __has_include(<cudnn_graph.h>)
#include <cudnn_graph.h>  // cuDNN 9: the error strings live with the graph API
#else
#include <cudnn.h>
#endif

#include <string>

#include "core/error.h"

namespace sb::detail {
inline std::string cuda_error_string(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}
inline std::string nccl_error_string(ncclResult_t status) {
  std::string message = ncclGetErrorString(status);
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
  // The last error's details (which peer, which transport), where NCCL recorded them.
  const char* detail = ncclGetLastError(nullptr);
  if (detail != nullptr && *detail != '\0') message += std::string(" (") + detail + ")";
#endif
  return message;
}
}  // namespace sb::detail

#define CHECK_CUDA(call)                                                                                 \
  do {                                                                                                   \
    cudaError_t sb_cuda_status_ = (call);                                                                \
    if (sb_cuda_status_ != cudaSuccess)                                                                  \
      ::sb::fatal_call(__FILE__, __LINE__, #call, ::sb::detail::cuda_error_string(sb_cuda_status_));     \
  } while (0)

// After a <<<...>>> launch: catches bad launch configurations at the launch site. Define
// SCALEBENCH_SYNC_LAUNCHES to also synchronise, so that a kernel's own fault is reported at its launch.
#ifdef SCALEBENCH_SYNC_LAUNCHES
#define CHECK_CUDA_LAUNCH()                                                                              \
  do {                                                                                                   \
    CHECK_CUDA(cudaGetLastError());                                                                      \
    CHECK_CUDA(cudaDeviceSynchronize());                                                                 \
  } while (0)
#else
#define CHECK_CUDA_LAUNCH() CHECK_CUDA(cudaGetLastError())
#endif

#define CHECK_CUDNN(call)                                                                                \
  do {                                                                                                   \
    cudnnStatus_t sb_cudnn_status_ = (call);                                                             \
    if (sb_cudnn_status_ != CUDNN_STATUS_SUCCESS)                                                        \
      ::sb::fatal_call(__FILE__, __LINE__, #call, cudnnGetErrorString(sb_cudnn_status_));                \
  } while (0)

#define CHECK_CUBLAS(call)                                                                               \
  do {                                                                                                   \
    cublasStatus_t sb_cublas_status_ = (call);                                                           \
    if (sb_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                      \
      ::sb::fatal_call(__FILE__, __LINE__, #call, cublasGetStatusString(sb_cublas_status_));             \
  } while (0)

#define CHECK_NCCL(call)                                                                                 \
  do {                                                                                                   \
    ncclResult_t sb_nccl_status_ = (call);                                                               \
    if (sb_nccl_status_ != ncclSuccess)                                                                  \
      ::sb::fatal_call(__FILE__, __LINE__, #call, ::sb::detail::nccl_error_string(sb_nccl_status_));     \
  } while (0)
