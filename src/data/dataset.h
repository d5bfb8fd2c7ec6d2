// A labelled image dataset held in host memory as uint8 pixels. The CUDA path copies it to the GPU
// once, still as uint8 (a quarter of the bytes of float), and normalises inside the augment kernel.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sb {

class EncodedImages;

struct Dataset {
  std::string name;  // e.g. "fashion-mnist/train"
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
  bool streamed() const { return encoded != nullptr; }
  int64_t sample_bytes() const { return static_cast<int64_t>(channels) * height * width; }
  const uint8_t* image(int64_t i) const { return images.data() + i * sample_bytes(); }
};

struct TrainTest {
  Dataset train;
  Dataset test;
};

// Keeps the first n samples (n <= 0 or n >= size keeps all), releasing the memory of the rest (of image
// files: the first n of their order; image_data_sets.h chooses that order).
void keep_first(Dataset& dataset, int64_t n);

// Checks the invariants above (sizes agree, labels in range, one mean/std per channel); a broken
// invariant is a bug in a reader, so it aborts rather than throwing a UserError.
void check_dataset(const Dataset& dataset);

}  // namespace sb
