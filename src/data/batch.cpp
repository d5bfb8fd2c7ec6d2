#include "data/batch.h"

#include <stdexcept>
#include <string>

namespace sb {

template <typename T>
void assemble_batch(const Dataset& data, std::span<const int64_t> indices, const BatchOptions& options,
                    const AugmentKey& key, uint64_t first_position, Tensor<T>& images, std::vector<int32_t>& labels) {
  // Bounded so that 2*pad+1 (the number of shifts) can't overflow in draw_crop_flip.
  if (options.random_crop && (options.crop_padding < 0 || options.crop_padding > 65535))
    throw std::invalid_argument("assemble_batch: crop padding " + std::to_string(options.crop_padding) +
                                " outside 0..65535");
  const int C = data.channels, H = data.height, W = data.width;
  const int64_t n = static_cast<int64_t>(indices.size());
  const int pad = options.random_crop ? options.crop_padding : 0;
  images.resize(Shape{n, C, H, W});
  labels.resize(static_cast<size_t>(n));
  T* out = images.data();
  for (int64_t j = 0; j < n; ++j) {
    const int64_t index = indices[static_cast<size_t>(j)];
    if (index < 0 || index >= data.size())
      throw std::out_of_range("assemble_batch: index " + std::to_string(index) + " outside dataset '" + data.name +
                              "' of " + std::to_string(data.size()) + " samples");
    labels[static_cast<size_t>(j)] = data.labels[static_cast<size_t>(index)];
    CropFlip t;
    if (options.random_crop || options.horizontal_flip) {
      t = draw_crop_flip(key.seed, key.epoch, key.rank, first_position + static_cast<uint64_t>(j), pad);
      if (!options.horizontal_flip) t.flip = false;
    }
    const uint8_t* image = data.image(index);
    for (int c = 0; c < C; ++c)
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x)
          *out++ = normalize_pixel<T>(crop_flip_pixel(image, H, W, c, y, x, t), data.mean[c], data.std[c]);
  }
}

template void assemble_batch<float>(const Dataset&, std::span<const int64_t>, const BatchOptions&, const AugmentKey&,
                                    uint64_t, Tensor<float>&, std::vector<int32_t>&);
template void assemble_batch<double>(const Dataset&, std::span<const int64_t>, const BatchOptions&, const AugmentKey&,
                                     uint64_t, Tensor<double>&, std::vector<int32_t>&);

}  // namespace sb
