// --input device (the default for data sets in memory): both splits copied to the device once as uint8,
// and each batch gathered, augmented and normalised there by one kernel (device_batches.h). An evaluation
// batch's indices go up through a pinned block of their own.
#pragma once
#include <memory>

#include "data/cuda/device_batches.h"
#include "data/cuda/input_pipeline.h"
#include "nn/cuda/device_buffer.h"

namespace sb::cuda {

class ResidentInput final : public InputPipeline {
 public:
  // Copies `train` and `test` to the current device (synchronous); they must outlive this.
  ResidentInput(const Dataset& train, const Dataset& test, const InputPipelineOptions& options);

  bool from_host() const override { return false; }
  void stage_training(int, std::span<const int64_t>, int, uint64_t, cudaStream_t) override {}
  DeviceTensor training_batch(int slot, int buffer, int64_t rows, const int64_t* device_indices,
                              const DeviceDrawKey& draws, cudaStream_t compute) override;
  DeviceTensor evaluation_batch(int slot, std::span<const int64_t> indices, int64_t evaluation_batch, int64_t number,
                                cudaStream_t compute) override;
  // One batch at a time: the last one's, whatever the slot.
  const int32_t* labels(int) const override { return batches_.labels(); }
  void consumed(int, cudaStream_t) override {}
  std::optional<InputTotals> input_totals() const override { return std::nullopt; }

 private:
  bool augment_;
  int64_t max_batch_;
  DeviceDataset train_, test_;
  DeviceBatches batches_;
  PinnedArray<int64_t> host_indices_;  // an evaluation batch's, reused from batch to batch
  DeviceBuffer device_indices_;
};

}  // namespace sb::cuda
