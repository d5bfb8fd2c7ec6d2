#include "kernels/device_utils.cuh"
#include "kernels/timestamp.h"

namespace sb::kernels {
namespace {

__global__ void record_timestamp_kernel(uint64_t* out) {
  uint64_t now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  *out = now;
}

}  // namespace

void record_timestamp(uint64_t* out, cudaStream_t stream) {
  record_timestamp_kernel<<<1, 1, 0, stream>>>(out);
  CHECK_CUDA_LAUNCH();
}

}  // namespace sb::kernels
