// The data sets of image files (--data imagefolder:DIR, --data tars:DIR): listed or indexed before any
// training, then read and decoded every epoch. Their samples are RGB images of the run's --image-size
// (224 x 224 unless changed), normalised with ImageNet's mean and std as torchvision's recipes do.
//   imagefolder:DIR   DIR/train/CLASS/* and DIR/val/CLASS/* (image_folder.h)
//   tars:DIR          DIR/train-*.tar and DIR/val-*.tar WebDataset shards (scalebench pack writes them) and
//                     DIR/classes.txt, a class name per line (without it: the largest label + 1 classes)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/image_decoding.h"

namespace sb {

// ImageNet's per-channel statistics in [0, 1] pixel units, as torchvision's Normalize takes them.
inline constexpr float kImageNetMean[3] = {0.485f, 0.456f, 0.406f};
inline constexpr float kImageNetStd[3] = {0.229f, 0.224f, 0.225f};
inline constexpr int kDefaultImageSize = 224;
inline constexpr int kDefaultValResize = 256;

// Evaluation's resize for crops of `image_size`: torchvision's 256 for 224, the same ratio for other
// sizes, rounded down (36 for 32, 32 for 28), as timm's crop_pct of 0.875 gives.
constexpr int val_resize_for(int image_size) { return image_size * kDefaultValResize / kDefaultImageSize; }

// train_limit > 0 keeps that many training images: of a folder, evenly spaced over its listing so that
// every class keeps its share; of shards, the first (pack shuffles the samples before it writes them).
// Throws UserError naming the folder or shard for a bad layout, a damaged shard or a label outside the
// classes. A folder's listing prints (rank 0) what it left out: hidden entries, and links to nothing
// under BadImages::Skip (image_folder.h).
TrainTest load_image_folder(const std::string& root, int64_t train_limit, BadImages bad_images = BadImages::Fail);
TrainTest load_tar_shards(const std::string& root, int64_t train_limit);

// Tar shards: the training samples of each shard, in order, which the sampler hands out whole
// (data/sampler.h); empty for any other form.
std::vector<int64_t> shard_sizes(const Dataset& data);

// The samples' size: image_size x image_size crops; evaluation resizes the shorter side to val_resize
// first. Does nothing to data sets that are not image files.
void set_image_sizes(TrainTest& data, int image_size, int val_resize);

}  // namespace sb
