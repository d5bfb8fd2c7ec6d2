#include "data/image/normalize_batch.h"

#include <stdexcept>
#include <string>

namespace sb {

NormalizedBatchWriter::NormalizedBatchWriter(std::span<const float> mean, std::span<const float> std,
                                             BatchFormat format, int out_height, int out_width)
    : channels_last_(format.layout == Layout::NHWC && mean.size() > 1),  // one channel: both layouts agree
      dtype_(format.dtype),
      height_(out_height),
      width_(out_width) {
  if (mean.size() != std.size() || mean.empty() || mean.size() > 4)
    throw std::invalid_argument("NormalizedBatchWriter: " + std::to_string(mean.size()) + " means and " +
                                std::to_string(std.size()) + " stds; give one of each per channel (1 to 4)");
  if (out_height < 1 || out_width < 1)
    throw std::invalid_argument("NormalizedBatchWriter: image size " + std::to_string(out_height) + "x" +
                                std::to_string(out_width) + " must be at least 1x1");
  for (size_t c = 0; c < mean.size(); ++c) values_.push_back(normalized_pixel_values(mean[c], std[c], dtype_));
  sample_bytes_ = static_cast<int64_t>(mean.size()) * out_height * out_width * static_cast<int64_t>(dtype_size(dtype_));
}

void NormalizedBatchWriter::write(const uint8_t* hwc, int64_t row, std::byte* batch) const {
  std::byte* at = batch + row * sample_bytes_;
  if (dtype_ == DType::F32)
    write_as(hwc, reinterpret_cast<uint32_t*>(at));
  else
    write_as(hwc, reinterpret_cast<uint16_t*>(at));
}

template <typename Bits>
void NormalizedBatchWriter::write_as(const uint8_t* hwc, Bits* out) const {
  const int C = channels();
  const int64_t pixels = static_cast<int64_t>(height_) * width_;
  if (channels_last_) {
    for (int64_t p = 0; p < pixels; ++p)
      for (int c = 0; c < C; ++c)
        out[p * C + c] = static_cast<Bits>(values_[static_cast<size_t>(c)][hwc[p * C + c]]);
    return;
  }
  for (int c = 0; c < C; ++c) {
    const PixelValues& value = values_[static_cast<size_t>(c)];
    Bits* plane = out + c * pixels;
    for (int64_t p = 0; p < pixels; ++p) plane[p] = static_cast<Bits>(value[hwc[p * C + c]]);
  }
}

}  // namespace sb
