// A labelled image dataset held in host memory as uint8 pixels. The CUDA path copies it to the GPU
// once, still as uint8 (a quarter of the bytes of float), and normalises inside the augment kernel.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sb {

class EncodedImages;

// The forms of --data, one row each in dataset_forms() (dataset_spec.h).
enum class DatasetKind { Mnist, FashionMnist, Cifar10, Cifar100, Synthetic, ImageFolder, Tars };

struct Dataset {
  std::string name;  // e.g. "fashion-mnist/train"
  DatasetKind kind = DatasetKind::Synthetic;  // the form it was loaded from: its row says how it is read
  int channels = 0;
  int height = 0;
  int width = 0;
  int num_classes = 0;
  std::vector<uint8_t> images;  // N x C x H x W, contiguous; empty when `encoded` holds the samples
  // Image files (--data imagefolder:, tars:): the N encoded images, read and decoded every epoch into
  // samples of C x H x W (image_batch.h), never held decoded.
  std::shared_ptr<EncodedImages> encoded;
  int resize_shorter = 0;  // image files' evaluation: the shorter side resized to this, then centre-cropped to H x W
  std::vector<int32_t> labels;  // N, each in [0, num_classes)
  // Per-channel statistics in [0, 1] pixel units, for (x/255 - mean) / std.
  std::vector<float> mean;
  std::vector<float> std;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  // Whether the samples stay in files, read and decoded every epoch (image files): the form's row says.
  bool streamed() const;
  int64_t sample_bytes() const { return static_cast<int64_t>(channels) * height * width; }
  const uint8_t* image(int64_t i) const { return images.data() + i * sample_bytes(); }
};

struct TrainTest {
  Dataset train;
  Dataset test;
};

// Keeps the first n samples of a data set in memory (n <= 0 or n >= size keeps all), releasing the
// memory of the rest. A streamed form's loader keeps its own limit (image_data_sets.h chooses which).
void keep_first(Dataset& dataset, int64_t n);

// Checks the invariants above (sizes agree, labels in range, one mean/std per channel); a broken
// invariant is a bug in a reader, so it aborts rather than throwing a UserError.
void check_dataset(const Dataset& dataset);

}  // namespace sb
