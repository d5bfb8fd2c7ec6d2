#include "train/engines/cuda/context_start.h"

#include <cuda_runtime.h>

namespace sb {

void create_cuda_context(int local_rank) noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0 || cudaSetDevice(local_rank % count) != cudaSuccess ||
      cudaFree(nullptr) != cudaSuccess) {
    cudaGetLastError();  // this thread's error state only; the engine checks every call itself
  }
}

}  // namespace sb
