// Batch assembly on the CPU: gather the samples of a list of dataset indices into an NCHW batch,
// augmented (see maths/augment.h for the exact, GPU-reproducible definition) and normalised per channel
// with the dataset's mean and std: (x/255 - mean[c]) / std[c].
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "core/tensor.h"
#include "data/dataset.h"
#include "maths/augment.h"

namespace sb {

struct BatchOptions {
  bool random_crop = false;
  int crop_padding = 4;  // zero padding, in pixels, on each side before the crop
  bool horizontal_flip = false;
};

// The CIFAR training augmentation: 4-pixel-padded random crop and horizontal flip with p = 0.5.
inline BatchOptions cifar_augmentation() { return BatchOptions{true, 4, true}; }

// Fills images (resized to [indices.size(), C, H, W]) and labels. Sample j of the batch is
// dataset sample indices[j], augmented with the draws of position first_position + j under key.
// An index outside the dataset, or a crop padding outside 0..65535, throws std::out_of_range /
// std::invalid_argument (callers pass sampler output, so this is a bug, not user input).
template <typename T>
void assemble_batch(const Dataset& data, std::span<const int64_t> indices, const BatchOptions& options,
                    const AugmentKey& key, uint64_t first_position, Tensor<T>& images, std::vector<int32_t>& labels);

// Without augmentation (evaluation): only gather and normalise.
template <typename T>
void assemble_batch(const Dataset& data, std::span<const int64_t> indices, Tensor<T>& images,
                    std::vector<int32_t>& labels) {
  assemble_batch(data, indices, BatchOptions{}, AugmentKey{}, 0, images, labels);
}

}  // namespace sb
