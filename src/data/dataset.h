// A labelled image dataset held in host memory as uint8 pixels. The CUDA path copies it to the GPU
// once, still as uint8 (a quarter of the bytes of float), and normalises inside the augment kernel.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sb {

struct Dataset {
  std::string name;  // e.g. "fashion-mnist/train"
  int channels = 0;
  int height = 0;
  int width = 0;
  int num_classes = 0;
  std::vector<uint8_t> images;  // N x C x H x W, contiguous
  std::vector<int32_t> labels;  // N, each in [0, num_classes)
  // Per-channel statistics in [0, 1] pixel units, for (x/255 - mean) / std.
  std::vector<float> mean;
  std::vector<float> std;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  int64_t sample_bytes() const { return static_cast<int64_t>(channels) * height * width; }
  const uint8_t* image(int64_t i) const { return images.data() + i * sample_bytes(); }
};

struct TrainTest {
  Dataset train;
  Dataset test;
};

// Keeps the first n samples (n <= 0 or n >= size keeps all), releasing the memory of the rest.
void keep_first(Dataset& dataset, int64_t n);

// Checks the invariants above (sizes agree, labels in range, one mean/std per channel); a broken
// invariant is a bug in a reader, so it aborts rather than throwing a UserError.
void check_dataset(const Dataset& dataset);

}  // namespace sb
