// What a CUDA engine hands a gradient-sync strategy's factory (GradientSyncSetup::device,
// train/engines/gradient_sync.h): the network whose gradients it averages, the context whose
// gradient-ready hook reports them final and whose compute stream the step runs on, the optimizer (for a
// strategy that takes the update over), and the engine's options.
#pragma once
#include "nn/cuda/context.h"
#include "nn/cuda/network.h"
#include "train/engines/cuda/cuda_engine_options.h"
#include "train/engines/cuda/device_optimizer.h"

namespace sb::cuda {

struct DeviceSyncParts {
  Network& net;
  Context& ctx;
  const DeviceOptimizer& optimizer;
  const CudaEngineOptions& options;
};

}  // namespace sb::cuda
