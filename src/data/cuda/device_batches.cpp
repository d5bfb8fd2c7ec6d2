#include "data/cuda/device_batches.h"

#include <string>

#include "core/cuda_check.h"
#include "core/error.h"
#include "kernels/augment.h"

namespace sb::cuda {

void check_fits_batch_kernel(const Dataset& data) {
  if (data.channels > kernels::kMaxAugmentChannels) {
    throw UserError("the CUDA batch kernel takes at most " + std::to_string(kernels::kMaxAugmentChannels) +
                    " channels; " + data.name + " has " + std::to_string(data.channels));
  }
}

DeviceDataset::DeviceDataset(const Dataset& data) : host_(data) {
  void* images = images_.ensure(data.images.size());
  CHECK_CUDA(cudaMemcpy(images, data.images.data(), data.images.size(), cudaMemcpyHostToDevice));
  const size_t label_bytes = data.labels.size() * sizeof(int32_t);
  void* labels = labels_.ensure(label_bytes);
  CHECK_CUDA(cudaMemcpy(labels, data.labels.data(), label_bytes, cudaMemcpyHostToDevice));
}

DeviceBatches::DeviceBatches(const BatchOptions& augmentation, uint64_t seed, int rank, DType dtype, Layout layout,
                             int64_t max_batch)
    : augmentation_(augmentation), seed_(seed), rank_(rank), dtype_(dtype), layout_(layout) {
  labels_.ensure_as<int32_t>(static_cast<size_t>(max_batch));
}

DeviceTensor DeviceBatches::enqueue(const DeviceDataset& data, const int64_t* indices, int64_t batch, bool augment,
                                    const DeviceDrawKey* draws, cudaStream_t stream) {
  const Dataset& host = data.host();
  kernels::GatherBatchArgs a;
  a.images = data.images();
  a.labels = data.labels();
  a.indices = indices;
  a.batch = batch;
  a.channels = host.channels;
  a.height = host.height;
  a.width = host.width;
  for (int c = 0; c < host.channels; ++c) {
    a.mean[c] = host.mean[static_cast<size_t>(c)];
    a.std[c] = host.std[static_cast<size_t>(c)];
  }
  if (augment) {
    a.random_crop = augmentation_.random_crop;
    a.crop_padding = augmentation_.crop_padding;
    a.horizontal_flip = augmentation_.horizontal_flip;
  }
  // Without draws (evaluation: no augmentation) the key's epoch and the first position are unused.
  a.key = kernels::AugmentDrawKey{seed_, 0, rank_};
  a.first_position = 0;
  if (draws) {
    a.epoch_device = draws->epoch;
    a.first_position_device = draws->first_position;
  }
  const size_t bytes = static_cast<size_t>(batch) * static_cast<size_t>(host.sample_bytes()) * dtype_size(dtype_);
  a.out = input_.ensure(bytes);
  a.dtype = dtype_;
  a.layout = layout_;
  a.labels_out = static_cast<int32_t*>(labels_.data());
  kernels::gather_batch(a, stream);

  DeviceTensor x;
  x.data = input_.data();
  x.desc = TensorDesc{Shape{batch, host.channels, host.height, host.width}, dtype_, layout_};
  return x;
}

}  // namespace sb::cuda
