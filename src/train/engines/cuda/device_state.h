// The run state (EngineState) of one GPU's network, optimizer, fp16 loss scale and loss totals: what the
// CUDA engine and DataParallel's replica 0 save into checkpoints and restore from them. The device's
// queued work must be finished.
#pragma once
#include "nn/cuda/network.h"
#include "train/engines/cuda/device_loss.h"
#include "train/engines/cuda/device_optimizer.h"
#include "train/engines/cuda/loss_scaler.h"
#include "train/engines/engine.h"
#include "train/train_config.h"

namespace sb::cuda {

struct DeviceStateParts {
  Network& net;
  const DeviceOptimizer& optimizer;
  const LossScaler* scaler;  // fp16 only
  const DeviceLossTotals& train_totals;
};

EngineState save_device_state(const DeviceStateParts& parts);
// Throws UserError naming the model and --optimizer when `state` was written for another.
void load_device_state(const DeviceStateParts& parts, const EngineState& state, const TrainConfig& config);

}  // namespace sb::cuda
