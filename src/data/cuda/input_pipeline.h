// Where a CUDA engine's batches come from, behind one interface: the engine asks for a training or an evaluation batch
// on the device and its labels, and says when the work that reads a slot's batch is queued. Two pipelines serve it: the
// data set resident on the device, each batch assembled there by one kernel (resident_input.h), or batches built by
// host workers (read, decoded on the CPU or by nvJPEG, cropped, normalised) and copied into per-slot device buffers, or
// left by nvJPEG where the step reads them (host_input.h). make_input_pipeline picks one, once; the engine's factory
// makes it and hands it to the engine.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "data/batch.h"
#include "data/batch_source.h"
#include "data/cuda/device_batches.h"
#include "data/dataset.h"
#include "data/host_ring.h"
#include "data/image_decoding.h"
#include "data/input_counters.h"
#include "nn/cuda/cuda_handles.h"
#include "nn/cuda/layer.h"

namespace sb::cuda {

// The batch slots an engine may have in flight: it fills one while the device still reads the other.
inline constexpr int kInputSlots = kInputSlotsPerGpu;

// How the host waits for the GPU work before an event: under the collective watchdog in training, since
// behind an upload may be a step's all-reduce.
using WaitForEvent = std::function<void(const CudaEvent&)>;

// What a pipeline needs to know of the run, filled by its caller.
struct InputPipelineOptions {
  bool from_host = false;                     // --input host (image files always come from the host)
  BatchOptions augmentation;                  // of the training batches of a data set in memory
  BadImages bad_images = BadImages::Fail;     // image files
  ImageDecoding decode = ImageDecoding::Cpu;  // image files: on the workers, or nvJPEG
  uint64_t seed = 0;
  int rank = 0, world_size = 1;
  bool drop_last = false;
  int64_t train_batch = 1;  // per rank
  int64_t max_batch = 1;    // the largest batch, training or evaluation
  BatchFormat format;       // the network's input
  int workers = 1;          // host workers
  bool pin_memory = true;
};

class InputPipeline {
 public:
  virtual ~InputPipeline() = default;

  // Whether the host builds and uploads the batches: their upload is then timed as the step's data
  // phase, before the step's device work.
  virtual bool from_host() const = 0;
  // Host batches: the training batch `indices` at `position` of `epoch` into `slot`, uploaded before the
  // compute stream's step, which waits for it. Nothing for the resident data set.
  virtual void stage_training(int slot, std::span<const int64_t> indices, int epoch, uint64_t position,
                              cudaStream_t compute) = 0;
  // The device buffers a staged training batch may lie in. A captured step reads its input at a fixed
  // address, so the engine captures a step per slot and buffer, and replays the one staged_buffer names.
  virtual int training_buffers() const { return 1; }
  // Which of those buffers holds the batch staged into `slot`.
  virtual int staged_buffer(int /*slot*/) const { return 0; }
  // A training batch of `rows` samples in `slot`: the host's batch in `buffer` (the one staged_buffer names,
  // or at capture each in turn), or assembled on the device from the indices at `device_indices` with the
  // draws of `draws` (a captured graph reads both at replay).
  virtual DeviceTensor training_batch(int slot, int buffer, int64_t rows, const int64_t* device_indices,
                                      const DeviceDrawKey& draws, cudaStream_t compute) = 0;
  // Evaluation batch `number` (evaluation_batch samples each) of this rank's test `indices`, into `slot`.
  virtual DeviceTensor evaluation_batch(int slot, std::span<const int64_t> indices, int64_t evaluation_batch,
                                        int64_t number, cudaStream_t compute) = 0;
  // The labels of the last batch in `slot`.
  virtual const int32_t* labels(int slot) const = 0;
  // After the work that reads `slot`'s batch is queued on `compute`.
  virtual void consumed(int slot, cudaStream_t compute) = 0;
  // Image files: the workers' reading, decoding and augmenting so far; nullopt for data in memory.
  virtual std::optional<InputTotals> input_totals() const = 0;
};

// Uploads the data sets to the device (a start-up part) or starts the host workers, on the current
// device, and logs which. `train`, `test` and whatever `wait` refers to must outlive the pipeline.
std::unique_ptr<InputPipeline> make_input_pipeline(const Dataset& train, const Dataset& test,
                                                   const InputPipelineOptions& options, WaitForEvent wait);

}  // namespace sb::cuda
