// One GPU's NVML readings, with NVML loaded at run time (dlopen), so that the build needs no NVML and a
// node without it simply reports nothing (every reading empty).
#pragma once
#include <cstdint>
#include <optional>

namespace sb {

// The limiters of NVML's violation counters (nvmlPerfPolicyType_t): how long each held the clocks below
// the application clocks.
enum class ClockLimiter { Power = 0, Thermal = 1 };

class NvmlDevice {
 public:
  // For the CUDA device `device` (matched to NVML by PCI bus id).
  explicit NvmlDevice(int device);
  ~NvmlDevice();
  NvmlDevice(const NvmlDevice&) = delete;
  NvmlDevice& operator=(const NvmlDevice&) = delete;

  bool available() const { return device_ != nullptr; }
  // Each reading is empty where NVML, the device or that counter is missing. Safe from any thread.
  std::optional<uint64_t> energy_mj() const;  // total energy since the driver loaded, mJ (Volta and later)
  std::optional<unsigned> sm_clock_mhz() const;  // the SM clock now
  std::optional<unsigned> temperature_c() const;  // the GPU die's temperature now, degrees Celsius
  std::optional<uint64_t> limited_ns(ClockLimiter limiter) const;  // cumulative time held below the application clocks

 private:
  void* library_ = nullptr;
  void* device_ = nullptr;
  // The readings' entry points, looked up once (null where this NVML lacks one).
  void* energy_fn_ = nullptr;
  void* clock_fn_ = nullptr;
  void* temperature_fn_ = nullptr;
  void* violation_fn_ = nullptr;
};

}  // namespace sb
