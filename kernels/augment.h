// Batch assembly on the GPU: ONE kernel gathers a batch from the GPU-resident uint8 dataset
// (N x C x H x W) by a device array of dataset indices, applies the CIFAR training augmentation when
// enabled (random crop of the zero-padded image, horizontal flip), normalises ((x/255 - mean[c]) / std[c])
// and writes the compute dtype in NCHW or NHWC; it also gathers the labels.
// The result equals the CPU batch assembly (src/data/batch.h, assemble_batch) element for element: the
// kernel calls the same SB_HOST_DEVICE functions of src/maths/augment.h (draw_crop_flip, crop_flip_pixel,
// normalize_pixel<float>), so the Philox draws and the arithmetic are literally shared; fp16/bf16 outputs
// are that fp32 value rounded once. This interface depends on nothing above core/: the draws' key is the
// plain AugmentDrawKey below, which the callers fill with sb::AugmentKey's values.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

constexpr int kMaxAugmentChannels = 4;

// The fields of sb::AugmentKey (src/maths/augment.h): the Philox key and the high counter word.
struct AugmentDrawKey {
  uint64_t seed = 0;
  int64_t epoch = 0;
  int rank = 0;
};

struct GatherBatchArgs {
  const uint8_t* images = nullptr;   // the dataset, N x C x H x W uint8, on the device
  const int32_t* labels = nullptr;   // the dataset's N labels, on the device
  const int64_t* indices = nullptr;  // the batch's dataset indices (device), each in [0, N): not checked
  int64_t batch = 0;
  int channels = 0, height = 0, width = 0;
  float mean[kMaxAugmentChannels] = {0, 0, 0, 0};  // per channel, in [0, 1] pixel units (Dataset::mean)
  float std[kMaxAugmentChannels] = {1, 1, 1, 1};   // Dataset::std

  // The fields of sb::BatchOptions (src/data/batch.h; cifar_augmentation() = {true, 4, true}) and the
  // draws' key: sample j uses position first_position + j under key, as assemble_batch does.
  bool random_crop = false;
  int crop_padding = 4;
  bool horizontal_flip = false;
  AugmentDrawKey key;
  uint64_t first_position = 0;
  // Optional device-resident values that override key.epoch and first_position, so that a captured CUDA
  // graph sees each step's values.
  const int64_t* epoch_device = nullptr;
  const uint64_t* first_position_device = nullptr;

  void* out = nullptr;  // [batch, C, H, W] stored in `layout`, elements of `dtype`
  DType dtype = DType::F32;
  Layout layout = Layout::NCHW;
  int32_t* labels_out = nullptr;  // [batch]; nullptr skips the labels
};

void gather_batch(const GatherBatchArgs& args, cudaStream_t stream);

}  // namespace sb::kernels
