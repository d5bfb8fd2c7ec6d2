// The host twin of kernels/resized_crop.h's output: resampled HWC uint8 images written as rows of a batch
// in the network's input format, normalised through per-channel tables of the CUDA kernels' values
// (pixel_values.h), so that a batch built here equals the kernel's wherever the raw bytes agree.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "data/host_batch.h"
#include "data/pixel_values.h"

namespace sb {

class NormalizedBatchWriter {
 public:
  // One mean and std per channel (in [0, 1] pixel units, as Dataset::mean/std); images of out_height x
  // out_width. Throws std::invalid_argument for sizes below 1 or mean/std counts that differ or are not 1..4.
  NormalizedBatchWriter(std::span<const float> mean, std::span<const float> std, BatchFormat format, int out_height,
                        int out_width);

  int channels() const { return static_cast<int>(values_.size()); }
  int64_t sample_bytes() const { return sample_bytes_; }  // one row of the batch

  // Writes `hwc` (out_height x out_width x channels uint8) as row `row` of the batch at `batch`, in the
  // format's dtype and layout ([C, H, W] or [H, W, C] per row). Safe from several threads on distinct rows.
  void write(const uint8_t* hwc, int64_t row, std::byte* batch) const;

 private:
  template <typename Bits>
  void write_as(const uint8_t* hwc, Bits* out) const;

  std::vector<PixelValues> values_;
  bool channels_last_;
  DType dtype_;
  int height_, width_;
  int64_t sample_bytes_;
};

}  // namespace sb
