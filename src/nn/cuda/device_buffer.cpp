#include "nn/cuda/device_buffer.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <string>

#include "core/cuda_check.h"

namespace sb::cuda {
namespace {
std::string& out_of_memory_hint() {
  static std::string hint = "lower --batch-size";
  return hint;
}
std::atomic<uint64_t> allocations{0};

// Per device: the bytes held now and the most held at once.
constexpr int kMaxDevices = 64;
struct DeviceBytes {
  std::atomic<size_t> now{0}, peak{0};
};
DeviceBytes& bytes_on(int device) {
  static DeviceBytes table[kMaxDevices];
  return table[static_cast<size_t>(device) % kMaxDevices];
}
void count_allocation(int device, size_t bytes) {
  DeviceBytes& d = bytes_on(device);
  const size_t now = d.now.fetch_add(bytes) + bytes;
  size_t peak = d.peak.load();
  while (now > peak && !d.peak.compare_exchange_weak(peak, now)) {
  }
}
std::string gib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}
}  // namespace

void set_out_of_memory_hint(const std::string& hint) { out_of_memory_hint() = hint; }

uint64_t device_buffer_generation() { return allocations.load(); }

size_t device_buffer_bytes(int device) { return bytes_on(device).now.load(); }
size_t device_buffer_peak_bytes(int device) { return bytes_on(device).peak.load(); }

void DeviceBuffer::release() {
  if (!data_) return;
  cudaFree(data_);  // a destructor or a move cannot stop the job: a failure here leaks at worst
  bytes_on(device_).now.fetch_sub(bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    bytes_ = o.bytes_;
    device_ = o.device_;
    read_by_graphs_ = o.read_by_graphs_;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void* DeviceBuffer::ensure(size_t bytes) {
  if (bytes <= bytes_ && data_) return data_;
  if (data_) {
    CHECK_CUDA(cudaFree(data_));
    bytes_on(device_).now.fetch_sub(bytes_);
  }
  data_ = nullptr;
  bytes_ = 0;
  const size_t rounded = device_aligned_bytes(bytes > 0 ? bytes : 1);
  int device = -1;
  CHECK_CUDA(cudaGetDevice(&device));
  const cudaError_t status = cudaMalloc(&data_, rounded);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    fatal("out of GPU memory: allocating " + gib(rounded) + " on device " + std::to_string(device) + " with " +
          gib(free_bytes) + " free of " + gib(total_bytes) + "; " + out_of_memory_hint());
  }
  CHECK_CUDA(status);
  if (read_by_graphs_) ++allocations;
  bytes_ = rounded;
  device_ = device;
  count_allocation(device_, rounded);
  return data_;
}

}  // namespace sb::cuda
