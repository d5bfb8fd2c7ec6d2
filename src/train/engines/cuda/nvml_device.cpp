#include "train/engines/cuda/nvml_device.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

namespace sb {
namespace {
// The few NVML entry points we use, by their C ABI (nvmlReturn_t is an int enum; 0 is NVML_SUCCESS).
using InitFn = int (*)();
using HandleByBusIdFn = int (*)(const char*, void**);
using EnergyFn = int (*)(void*, unsigned long long*);
using ClockFn = int (*)(void*, int, unsigned*);  // nvmlDeviceGetClockInfo(device, nvmlClockType_t, MHz)
using TemperatureFn = int (*)(void*, int, unsigned*);  // nvmlDeviceGetTemperature(device, sensor, C)
struct ViolationTime {                           // nvmlViolationTime_t
  unsigned long long reference_us;
  unsigned long long violation_ns;
};
using ViolationFn = int (*)(void*, int, ViolationTime*);  // nvmlDeviceGetViolationStatus
using ShutdownFn = int (*)();

constexpr int kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;  // NVML_CLOCK_SM
constexpr int kNvmlTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU: the die

template <typename F>
F symbol(void* library, const char* name) {
  return reinterpret_cast<F>(dlsym(library, name));
}

template <typename F>
F as(void* fn) {
  return reinterpret_cast<F>(fn);
}
}  // namespace

NvmlDevice::NvmlDevice(int device) {
  library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library_) return;  // no NVML on this node
  auto init = symbol<InitFn>(library_, "nvmlInit_v2");
  auto by_bus = symbol<HandleByBusIdFn>(library_, "nvmlDeviceGetHandleByPciBusId_v2");
  if (!init || !by_bus || init() != kNvmlSuccess) {  // NVML did not initialise: nothing to shut down
    dlclose(library_);
    library_ = nullptr;
    return;
  }
  char bus_id[32] = {0};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess) {
    cudaGetLastError();  // no PCI bus id for the device
    return;
  }
  void* handle = nullptr;
  if (by_bus(bus_id, &handle) != kNvmlSuccess) return;
  device_ = handle;
  energy_fn_ = dlsym(library_, "nvmlDeviceGetTotalEnergyConsumption");
  clock_fn_ = dlsym(library_, "nvmlDeviceGetClockInfo");
  temperature_fn_ = dlsym(library_, "nvmlDeviceGetTemperature");
  violation_fn_ = dlsym(library_, "nvmlDeviceGetViolationStatus");
}

NvmlDevice::~NvmlDevice() {
  if (!library_) return;
  if (auto shutdown = symbol<ShutdownFn>(library_, "nvmlShutdown")) shutdown();
  dlclose(library_);
}

std::optional<uint64_t> NvmlDevice::energy_mj() const {
  unsigned long long mj = 0;
  if (!energy_fn_ || as<EnergyFn>(energy_fn_)(device_, &mj) != kNvmlSuccess) return std::nullopt;
  return mj;
}

std::optional<unsigned> NvmlDevice::sm_clock_mhz() const {
  unsigned mhz = 0;
  if (!clock_fn_ || as<ClockFn>(clock_fn_)(device_, kNvmlClockSm, &mhz) != kNvmlSuccess) return std::nullopt;
  return mhz;
}

std::optional<unsigned> NvmlDevice::temperature_c() const {
  unsigned celsius = 0;
  if (!temperature_fn_ || as<TemperatureFn>(temperature_fn_)(device_, kNvmlTemperatureGpu, &celsius) != kNvmlSuccess)
    return std::nullopt;
  return celsius;
}

std::optional<uint64_t> NvmlDevice::limited_ns(ClockLimiter limiter) const {
  ViolationTime t{};
  if (!violation_fn_ || as<ViolationFn>(violation_fn_)(device_, static_cast<int>(limiter), &t) != kNvmlSuccess)
    return std::nullopt;
  return t.violation_ns;
}

}  // namespace sb
