// The CUDA devices and library versions this process sees (for `info`, the results file and device choice).
#pragma once
#include <cstddef>
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

// The most device memory in use (total - free) at any sample so far.
class PeakDeviceMemory {
 public:
  void sample() {
    size_t free_bytes = 0, total_bytes = 0;
    device_memory(free_bytes, total_bytes);
    if (total_bytes - free_bytes > peak_) peak_ = total_bytes - free_bytes;
  }
  size_t bytes() const { return peak_; }

 private:
  size_t peak_ = 0;
};

}  // namespace sb
