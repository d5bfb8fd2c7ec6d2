#include "data/cuda/resident_input.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/cuda_check.h"
#include "core/error.h"

namespace sb::cuda {

ResidentInput::ResidentInput(const Dataset& train, const Dataset& test, const InputPipelineOptions& options)
    : augment_(options.augmentation.random_crop || options.augmentation.horizontal_flip),
      max_batch_(options.max_batch),
      train_(train),
      test_(test),
      batches_(options.augmentation, options.seed, options.rank, options.format.dtype, options.format.layout,
               options.max_batch),
      host_indices_(static_cast<size_t>(options.max_batch)) {
  device_indices_.ensure_as<int64_t>(static_cast<size_t>(options.max_batch));
}

DeviceTensor ResidentInput::training_batch(int, int, int64_t rows, const int64_t* device_indices,
                                           const DeviceDrawKey& draws, cudaStream_t compute) {
  return batches_.enqueue(train_, device_indices, rows, augment_, &draws, compute);
}

DeviceTensor ResidentInput::evaluation_batch(int, std::span<const int64_t> indices, int64_t evaluation_batch,
                                             int64_t number, cudaStream_t compute) {
  const size_t begin = static_cast<size_t>(number * evaluation_batch);
  const auto part = indices.subspan(begin, std::min(static_cast<size_t>(evaluation_batch), indices.size() - begin));
  if (static_cast<int64_t>(part.size()) > max_batch_)
    fatal("CUDA input: an evaluation batch of " + std::to_string(part.size()) + " exceeds the planned " +
          std::to_string(max_batch_));
  CHECK_CUDA(cudaStreamSynchronize(compute));  // the batch before may still read the pinned indices
  std::memcpy(host_indices_.data(), part.data(), part.size_bytes());
  auto* on_device = static_cast<int64_t*>(device_indices_.data());
  CHECK_CUDA(cudaMemcpyAsync(on_device, host_indices_.data(), part.size_bytes(), cudaMemcpyHostToDevice, compute));
  return batches_.enqueue(test_, on_device, static_cast<int64_t>(part.size()), false, nullptr, compute);
}

}  // namespace sb::cuda
