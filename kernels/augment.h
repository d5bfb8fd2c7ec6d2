// Batch assembly on the GPU: ONE kernel gathers a batch from the GPU-resident uint8 dataset
// (N x C x H x W) by a device array of sample indices, applies the CIFAR augmentation when enabled
// (random crop from the image zero-padded by `pad` pixels on each side, then a horizontal flip with
// probability 1/2, as torchvision's RandomCrop(padding=4) + RandomHorizontalFlip), normalises
// ((x/255 - mean[c]) / std[c]), and writes the compute dtype in NCHW or NHWC. It also gathers the labels.
// The random draws are the CPU batch assembly's (src/data/batch.h), so both backends see the same
// images; see augment.cu for the (key, counter) mapping.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace sb::kernels {

constexpr int kMaxAugmentChannels = 4;

struct GatherBatchArgs {
  const uint8_t* images = nullptr;   // the dataset, N x C x H x W uint8, on the device
  const int32_t* labels = nullptr;   // the dataset's N labels
  const int64_t* indices = nullptr;  // batch dataset indices (device), e.g. a slice of the epoch's order
  int64_t batch = 0;
  int channels = 0, height = 0, width = 0;
  float mean[kMaxAugmentChannels] = {0, 0, 0, 0};  // per channel, in [0, 1] pixel units
  float std[kMaxAugmentChannels] = {1, 1, 1, 1};

  bool augment = false;  // random crop + flip (training); false: normalise only
  int pad = 4;
  uint64_t key = 0;             // Philox key of the augmentation stream (see src/data/batch.h)
  uint64_t stream = 0;          // Philox stream (e.g. the epoch)
  int64_t first_position = 0;   // position of the batch's first sample in the epoch's order

  void* out = nullptr;  // [batch, C, H, W] in `layout` and `dtype`
  DType dtype = DType::F32;
  Layout layout = Layout::NCHW;
  int32_t* labels_out = nullptr;  // [batch]; nullptr skips
};

void gather_batch(const GatherBatchArgs& args, cudaStream_t stream);

}  // namespace sb::kernels
