#include "train/cuda/gpu_energy.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <limits>

namespace sb {
namespace {
// The few NVML entry points we use, by their C ABI (nvmlReturn_t is an int enum; 0 is NVML_SUCCESS).
using InitFn = int (*)();
using HandleByBusIdFn = int (*)(const char*, void**);
using EnergyFn = int (*)(void*, unsigned long long*);
using ShutdownFn = int (*)();

template <typename F>
F symbol(void* library, const char* name) {
  return reinterpret_cast<F>(dlsym(library, name));
}
}  // namespace

GpuEnergyMeter::GpuEnergyMeter(int device) {
  library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library_) return;  // no NVML on this node
  auto init = symbol<InitFn>(library_, "nvmlInit_v2");
  auto by_bus = symbol<HandleByBusIdFn>(library_, "nvmlDeviceGetHandleByPciBusId_v2");
  auto energy = symbol<EnergyFn>(library_, "nvmlDeviceGetTotalEnergyConsumption");
  char bus_id[32] = {0};
  if (!init || !by_bus || !energy || init() != 0) return;  // NVML did not initialise
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess) {
    cudaGetLastError();  // no PCI bus id for the device
    return;
  }
  void* handle = nullptr;
  if (by_bus(bus_id, &handle) != 0 || energy(handle, &start_mj_) != 0) return;  // no energy counter
  device_ = handle;
}

GpuEnergyMeter::~GpuEnergyMeter() {
  if (!library_) return;
  if (auto shutdown = symbol<ShutdownFn>(library_, "nvmlShutdown"); shutdown && device_) shutdown();
  dlclose(library_);
}

double GpuEnergyMeter::joules() const {
  if (!device_) return std::numeric_limits<double>::quiet_NaN();
  unsigned long long now_mj = 0;
  if (symbol<EnergyFn>(library_, "nvmlDeviceGetTotalEnergyConsumption")(device_, &now_mj) != 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return static_cast<double>(now_mj - start_mj_) * 1e-3;
}

}  // namespace sb
