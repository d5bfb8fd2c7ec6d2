// --device auto: the device a run takes when the command line leaves the choice to the machine. The
// choice is made once, before the configuration is validated or recorded, so the results file and any
// checkpoint hold the device the run used ("cpu" or "cuda"), never "auto".
#pragma once
#include <string>

#include "train/run_choices.h"

namespace sb {

struct DeviceChoice {
  Device device = Device::Cpu;
  std::string reason;  // why this device, for the run's first line
};

// `requested` as the command line gave it; `cuda_built`: the CUDA backend is compiled in; `gpus_visible`:
// the fewest GPUs any rank sees. Only Auto is decided here: cpu and cuda stay as given (a cuda run on a
// machine without one is refused later, with its own message).
DeviceChoice resolve_device(Device requested, bool cuda_built, int gpus_visible);

// "device: cpu (no CUDA device visible)"
std::string device_line(const DeviceChoice& choice);

}  // namespace sb
