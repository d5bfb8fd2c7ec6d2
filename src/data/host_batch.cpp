#include "data/host_batch.h"

#include <stdexcept>
#include <string>

namespace sb {
HostBatchBuilder::HostBatchBuilder(const Dataset& data, const BatchOptions& augmentation, BatchFormat format)
    : data_(data),
      augmentation_(augmentation),
      // One channel: both layouts store the same order, as the kernel treats it.
      channels_last_(format.layout == Layout::NHWC && data.channels > 1),
      dtype_(format.dtype),
      sample_bytes_(data.sample_bytes() * static_cast<int64_t>(dtype_size(format.dtype))),
      values_(static_cast<size_t>(data.channels)) {
  if (augmentation.random_crop && (augmentation.crop_padding < 0 || augmentation.crop_padding > 65535))
    throw std::invalid_argument("HostBatchBuilder: crop padding " + std::to_string(augmentation.crop_padding) +
                                " outside 0..65535");
  for (size_t c = 0; c < values_.size(); ++c) values_[c] = normalized_pixel_values(data.mean[c], data.std[c], dtype_);
}

void HostBatchBuilder::fill(std::span<const int64_t> indices, const AugmentKey& key, uint64_t first_position,
                            int64_t row_begin, int64_t row_end, std::byte* images, int32_t* labels,
                            SkippedFiles*) const {
  if (row_begin < 0 || row_end > static_cast<int64_t>(indices.size()) || row_begin > row_end)
    throw std::out_of_range("HostBatchBuilder: rows [" + std::to_string(row_begin) + ", " + std::to_string(row_end) +
                            ") outside a batch of " + std::to_string(indices.size()));
  if (dtype_ == DType::F32)
    fill_rows(indices, key, first_position, row_begin, row_end, reinterpret_cast<uint32_t*>(images), labels);
  else
    fill_rows(indices, key, first_position, row_begin, row_end, reinterpret_cast<uint16_t*>(images), labels);
}

template <typename Bits>
void HostBatchBuilder::fill_rows(std::span<const int64_t> indices, const AugmentKey& key, uint64_t first_position,
                                 int64_t row_begin, int64_t row_end, Bits* images, int32_t* labels) const {
  const int C = data_.channels, H = data_.height, W = data_.width;
  const int64_t per_sample = data_.sample_bytes();
  const bool draws = augmentation_.random_crop || augmentation_.horizontal_flip;
  const int pad = augmentation_.random_crop ? augmentation_.crop_padding : 0;
  for (int64_t j = row_begin; j < row_end; ++j) {
    const int64_t index = indices[static_cast<size_t>(j)];
    if (index < 0 || index >= data_.size())
      throw std::out_of_range("host batch: index " + std::to_string(index) + " outside dataset '" + data_.name +
                              "' of " + std::to_string(data_.size()) + " samples");
    labels[j] = data_.labels[static_cast<size_t>(index)];
    CropFlip t;
    if (draws) {
      t = draw_crop_flip(key.seed, key.epoch, key.rank, first_position + static_cast<uint64_t>(j), pad);
      if (!augmentation_.horizontal_flip) t.flip = false;
    }
    const uint8_t* image = data_.image(index);
    Bits* out = images + j * per_sample;
    for (int c = 0; c < C; ++c) {
      const PixelValues& value = values_[static_cast<size_t>(c)];
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
          const int64_t at = channels_last_ ? (static_cast<int64_t>(y) * W + x) * C + c : (static_cast<int64_t>(c) * H + y) * W + x;
          out[at] = static_cast<Bits>(value[static_cast<size_t>(crop_flip_pixel(image, H, W, c, y, x, t))]);
        }
    }
  }
}

std::unique_ptr<BatchSource> make_host_batch_source(const Dataset& data, bool training, const BatchOptions& augmentation,
                                                    BatchFormat format, BadImages, int, InputCounters&) {
  return std::make_unique<HostBatchBuilder>(data, training ? augmentation : BatchOptions{}, format);
}

}  // namespace sb
