// The CUDA devices and library versions this process sees (for `info`, the results file and device choice).
#pragma once
#include <string>

namespace sb {

struct CudaVersions {
  std::string runtime, driver, cudnn, nccl;
};

int visible_gpu_count();  // 0 when there is no usable device (no driver, none visible)
std::string gpu_name(int device);
CudaVersions cuda_versions();
// Total and free memory of the current device, in bytes.
void device_memory(size_t& free_bytes, size_t& total_bytes);

}  // namespace sb
