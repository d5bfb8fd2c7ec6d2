#include "nn/cuda/device_buffer.h"

#include <cuda_runtime_api.h>

#include "core/cuda_check.h"

namespace sb::cuda {

DeviceBuffer::~DeviceBuffer() {
  if (data_) cudaFree(data_);  // a destructor cannot stop the job; a failure here leaks at worst
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (data_) cudaFree(data_);
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void* DeviceBuffer::ensure(size_t bytes) {
  if (bytes <= bytes_ && data_) return data_;
  if (data_) CHECK_CUDA(cudaFree(data_));
  data_ = nullptr;
  bytes_ = 0;
  // Round up to 256 bytes: every view into it is then aligned for vector loads and cuDNN's 16-byte rule.
  const size_t rounded = ((bytes > 0 ? bytes : 1) + 255) / 256 * 256;
  CHECK_CUDA(cudaMalloc(&data_, rounded));
  bytes_ = rounded;
  return data_;
}

}  // namespace sb::cuda
