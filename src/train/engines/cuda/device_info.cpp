#include "train/engines/cuda/device_info.h"

#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include "comm/cuda/nccl_communicator.h"
#include "core/cuda_check.h"

namespace sb {
namespace {
std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }
}  // namespace

int visible_gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: not an error for a query
    return 0;
  }
  return count;
}

std::string gpu_name(int device) {
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

CudaVersions cuda_versions() {
  CudaVersions v;
  int runtime = 0, driver = 0;
  v.runtime = cudaRuntimeGetVersion(&runtime) == cudaSuccess ? cuda_version_text(runtime) : "n/a";
  v.driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0 ? cuda_version_text(driver) : "n/a";
  cudaGetLastError();
  const size_t cudnn = cudnnGetVersion();
  v.cudnn = std::to_string(cudnn / 10000) + "." + std::to_string((cudnn % 10000) / 100) + "." + std::to_string(cudnn % 100);
  v.nccl = cuda::nccl_version_string();
  return v;
}

void device_memory(size_t& free_bytes, size_t& total_bytes) { CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes)); }

}  // namespace sb
