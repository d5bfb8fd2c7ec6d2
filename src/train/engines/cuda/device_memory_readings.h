// The two peaks of device memory a CUDA engine reports each epoch (train/engines/epoch_reading.h), the
// largest rank's: the memory in use and what the engine's own buffers held at once.
#pragma once
#include <vector>

#include "train/engines/cuda/device_info.h"
#include "train/engines/epoch_reading.h"

namespace sb::cuda {

// in_use: the samples of the memory in use (the device's total less its free memory, the CUDA context and
// the libraries' memory included) -> peak_memory_bytes; the most `device`'s DeviceBuffers held at once
// (PyTorch's torch.cuda.max_memory_allocated() measure) -> peak_allocated_bytes. `in_use` must outlive
// the readings.
std::vector<EpochReading> device_memory_readings(const PeakDeviceMemory& in_use, int device);

}  // namespace sb::cuda
