#include "train/engines/cuda/device_memory_readings.h"

#include "nn/cuda/device_buffer.h"

namespace sb::cuda {

std::vector<EpochReading> device_memory_readings(const PeakDeviceMemory& in_use, int device) {
  return {
      {&EpochRow::peak_memory_bytes, ReduceOp::Max, EpochValue::AsRead,
       [&in_use] { return static_cast<double>(in_use.bytes()); }},
      {&EpochRow::peak_allocated_bytes, ReduceOp::Max, EpochValue::AsRead,
       [device] { return static_cast<double>(device_buffer_peak_bytes(device)); }},
  };
}

}  // namespace sb::cuda
