#include "train/device_choice.h"

namespace sb {

DeviceChoice resolve_device(Device requested, bool cuda_built, int gpus_visible) {
  if (requested != Device::Auto) return {requested, "--device " + std::string(name_of(requested))};
  if (!cuda_built) return {Device::Cpu, "--device auto; the CUDA backend is not built"};
  if (gpus_visible <= 0) return {Device::Cpu, "--device auto; no CUDA device visible"};
  return {Device::Cuda, "--device auto; " + std::to_string(gpus_visible) + " CUDA device(s) visible on every rank"};
}

std::string device_line(const DeviceChoice& choice) {
  return "device: " + std::string(name_of(choice.device)) + " (" + choice.reason + ")";
}

}  // namespace sb
