// Batches assembled on the device: the dataset lives on the GPU as uint8 (uploaded once), and one kernel
// (kernels/augment.h) gathers a batch's samples by index, augments and normalises them into the compute
// dtype and layout, and gathers their labels.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "nn/cuda/device_buffer.h"
#include "nn/cuda/layer.h"

namespace sb::cuda {

// Where a captured step's batch kernel reads the augmentation's epoch and the batch's first sample
// position at replay: device memory that the engine refreshes before each step.
struct DeviceDrawKey {
  const int64_t* epoch = nullptr;
  const uint64_t* first_position = nullptr;
};

// Throws a UserError when the batch kernel can't take `data`'s samples (too many channels).
void check_fits_batch_kernel(const Dataset& data);

// A dataset copied to the device, as uint8: a quarter of float's bytes; the batch kernel normalises.
class DeviceDataset {
 public:
  explicit DeviceDataset(const Dataset& data);  // synchronous copy; `data` must outlive this
  const Dataset& host() const { return host_; }
  const uint8_t* images() const { return static_cast<const uint8_t*>(images_.data()); }
  const int32_t* labels() const { return static_cast<const int32_t*>(labels_.data()); }

 private:
  const Dataset& host_;
  DeviceBuffer images_, labels_;
};

class DeviceBatches {
 public:
  // augmentation: the training batches' (evaluation batches are never augmented); seed and rank key
  // its draws as the CPU engine's. Batches hold up to max_batch samples.
  DeviceBatches(const BatchOptions& augmentation, uint64_t seed, int rank, DType dtype, Layout layout,
                int64_t max_batch);

  // Queues the batch kernel for `batch` samples of `data` at the device indices `indices`. With
  // `draws`, the augmentation's epoch and first position are read from there, so that a captured graph
  // draws each step's own. Returns the batch as the network's input; its labels are at labels().
  DeviceTensor enqueue(const DeviceDataset& data, const int64_t* indices, int64_t batch, bool augment,
                       const DeviceDrawKey* draws, cudaStream_t stream);
  const int32_t* labels() const { return static_cast<const int32_t*>(labels_.data()); }

 private:
  BatchOptions augmentation_;
  uint64_t seed_;
  int rank_;
  DType dtype_;
  Layout layout_;
  DeviceBuffer input_, labels_;
};

}  // namespace sb::cuda
