#include "train/engines/cuda/device_timestamps.h"

#include <cstring>
#include <string>

#include "core/error.h"
#include "kernels/timestamp.h"

namespace sb::cuda {

DeviceTimestamps::DeviceTimestamps(size_t count) : slots_(count) {
  std::memset(slots_.data(), 0, count * sizeof(uint64_t));
}

void DeviceTimestamps::record(size_t i, cudaStream_t stream) const {
  if (i >= slots_.size()) fatal("DeviceTimestamps: slot " + std::to_string(i) + " of " + std::to_string(slots_.size()));
  // Pinned memory is mapped into the device's address space under unified addressing: the kernel writes it.
  kernels::record_timestamp(slots_.data() + i, stream);
}

uint64_t DeviceTimestamps::ns(size_t i) const {
  if (i >= slots_.size()) fatal("DeviceTimestamps: slot " + std::to_string(i) + " of " + std::to_string(slots_.size()));
  // The device wrote it behind the compiler's back.
  return *static_cast<volatile const uint64_t*>(slots_.data() + i);
}

double DeviceTimestamps::seconds(size_t from, size_t to) const {
  constexpr double kSecondsPerNanosecond = 1e-9;
  return static_cast<double>(static_cast<int64_t>(ns(to) - ns(from))) * kSecondsPerNanosecond;
}

}  // namespace sb::cuda
