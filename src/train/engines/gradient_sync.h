// How an engine averages its gradients across ranks: the seam between the training step and its
// collectives. A strategy is one implementation of GradientSync and one row (GradientSyncStrategy) of the
// table the engines take theirs from (src/cli/gradient_sync_table.cpp; docs/architecture.md, "Adding a
// gradient-sync strategy"). The engine calls it at the step's few points:
//
//   begin            a step of k micro-batches starts;
//   gradients_ready  the gradients from an offset to the buffer's end are final: a bucket's worth as
//                    backward goes on (the CUDA layers report it through the context's gradient-ready hook,
//                    which the strategy installs), or the whole buffer (offset 0) after the last backward;
//   finish           every gradient is written: the average must be in place before the update (on the
//                    GPU, the compute stream waits for it; on the host, the call returns with it).
//
// Host side only: device streams pass as opaque handles, and a device strategy's factory takes the
// engine's device parts (train/engines/cuda/device_sync_parts.h) at construction.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "metrics/step_timeline.h"
#include "train/run_choices.h"
#include "train/train_config.h"

namespace sb {
namespace cuda {
struct DeviceSyncParts;
}

// A device stream, opaque here (a cudaStream_t on the GPU); null on the host.
using StreamHandle = void*;

class GradientSync {
 public:
  virtual ~GradientSync() = default;

  // A step of `micro_batches` micro-batches starts; a device strategy records its timestamps in step slot
  // `slot` (0 on the host). With several micro-batches the gradients are final only after the last one.
  virtual void begin(int slot, size_t micro_batches) = 0;
  // Gradients [first_final, end) are final, in the order of `ready_on` (null on the host).
  virtual void gradients_ready(int64_t first_final, StreamHandle ready_on) = 0;
  // Every gradient is written: launches what is left and makes the average ready for the update.
  virtual void finish() = 0;

  // Whether anything crosses between ranks (false on one rank, where a strategy may do nothing at all).
  virtual bool averages() const = 0;
  // Whether the strategy runs the optimizer's update itself (the CUDA buckets' optimizer overlap): the
  // engine then queues none.
  virtual bool updates_parameters() const { return false; }
  // After the step in `slot` is complete: where each bucket's exchange ran on the device, relative to the
  // step's start (`step_start_ns` on the device's clock), in launch order; none where it takes no timestamps.
  virtual std::vector<BucketSpan> read_times(int /*slot*/, uint64_t /*step_start_ns*/) const { return {}; }
};

// What a strategy is built from. The gradient buffer is the engine's flat fp32 gradient buffer (host or
// device memory), at a fixed address for the engine's life.
struct GradientSyncSetup {
  const TrainConfig& config;
  Communicator& comm;
  std::span<float> grads;
  cuda::DeviceSyncParts* device = nullptr;  // the CUDA engine's parts; null on the host
};

// One row of the strategies table.
struct GradientSyncStrategy {
  const char* name;
  const char* description;
  Device device;  // the backend whose engine runs it
  std::unique_ptr<GradientSync> (*make)(const GradientSyncSetup& setup);
};

}  // namespace sb
