// A grow-only block of device memory. Layers keep their outputs in these so that, after one warm-up
// step, no address changes any more and the whole step can be captured in a CUDA graph.
#pragma once
#include <cstddef>

namespace sb::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_) { o.data_ = nullptr; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // At least `bytes` of device memory. Grows (the old contents are lost) only when smaller; never
  // shrinks. Growing frees the old block, which waits for the device (cudaFree), so it must not happen
  // inside a stream capture.
  void* ensure(size_t bytes);
  template <typename T>
  T* ensure_as(size_t count) { return static_cast<T*>(ensure(count * sizeof(T))); }

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace sb::cuda
