#include "data/image_batch.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "data/image/decoded_image.h"
#include "data/image/encoded_images.h"
#include "data/image/image_decoder.h"
#include "data/image/normalize_batch.h"
#include "data/image/resample.h"

namespace sb {
namespace {

using Clock = std::chrono::steady_clock;
int64_t ns_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

// The whole pixels the resampling of `box` reads: the box grown by the filter's reach (the larger of its
// downscale factor and the largest DCT denominator, 8) and a pixel more, within the image.
CropBox region_for(const ResizedCropBox& box, int width, int height, int out_width, int out_height) {
  const double reach = std::max({static_cast<double>(box.width) / out_width, static_cast<double>(box.height) / out_height, 8.0}) + 1;
  const int x0 = std::max(0, static_cast<int>(std::floor(box.x - reach)));
  const int y0 = std::max(0, static_cast<int>(std::floor(box.y - reach)));
  const int x1 = std::min(width, static_cast<int>(std::ceil(box.x + box.width + reach)));
  const int y1 = std::min(height, static_cast<int>(std::ceil(box.y + box.height + reach)));
  return CropBox{x0, y0, x1 - x0, y1 - y0};
}

}  // namespace

ResizedCropBox image_crop_box(const Dataset& data, bool training, const AugmentKey& key, uint64_t position, int width,
                           int height) {
  if (training) return draw_random_resized_crop(key.seed, key.epoch, key.rank, position, width, height, RandomResizedCropParams{});
  return center_crop_box(width, height, data.resize_shorter, data.width);
}

ImageBatchBuilder::ImageBatchBuilder(const Dataset& data, bool training, BatchFormat format, BadImages bad_images,
                                     int rank, InputCounters& counters)
    : data_(data),
      training_(training),
      bad_images_(data, bad_images, rank, counters),
      counters_(counters),
      sample_bytes_(data.sample_bytes() * static_cast<int64_t>(dtype_size(format.dtype))),
      writer_(data.mean, data.std, format, data.height, data.width) {
  if (!data.streamed() || data.channels != 3) throw std::invalid_argument("ImageBatchBuilder: not a data set of RGB image files");
}

void ImageBatchBuilder::build_row(std::span<const uint8_t> bytes, const AugmentKey& key, uint64_t position,
                                  std::byte* out) const {
  auto t0 = Clock::now();
  const ImageSize size = read_image_size(bytes);
  const ResizedCropBox box = image_crop_box(data_, training_, key, position, size.width, size.height);
  DecodeOptions options;
  options.exact_crop = false;
  options.crop = region_for(box, size.width, size.height, data_.width, data_.height);
  // The smallest decode whose box still has the output's size: the resampling then only shrinks by less than 2.
  options.min_width = static_cast<int>(std::ceil(data_.width * static_cast<double>(options.crop.width) / box.width));
  options.min_height = static_cast<int>(std::ceil(data_.height * static_cast<double>(options.crop.height) / box.height));
  thread_local DecodedImage region;
  decode_image_into(bytes, options, region);
  counters_.add_decode(ns_since(t0));

  t0 = Clock::now();
  thread_local std::vector<uint8_t> crop;
  crop.resize(static_cast<size_t>(data_.height) * data_.width * 3);
  const int d = region.scale_denominator;
  const ResizedCropBox local{box.x / d - region.x, box.y / d - region.y, box.width / d, box.height / d, box.flip};
  resample_crop(region.pixels.data(), region.width, region.height, 3, local, data_.width, data_.height, crop.data());
  writer_.write(crop.data(), 0, out);
  counters_.add_augment(ns_since(t0), 1);
}

void ImageBatchBuilder::fill(std::span<const int64_t> indices, const AugmentKey& key, uint64_t first_position,
                             int64_t row_begin, int64_t row_end, std::byte* images, int32_t* labels,
                             SkippedFiles* skipped) const {
  if (row_begin < 0 || row_end > static_cast<int64_t>(indices.size()) || row_begin > row_end)
    throw std::out_of_range("ImageBatchBuilder: rows [" + std::to_string(row_begin) + ", " + std::to_string(row_end) +
                            ") outside a batch of " + std::to_string(indices.size()));
  for (int64_t j = row_begin; j < row_end; ++j)
    if (indices[static_cast<size_t>(j)] < 0 || indices[static_cast<size_t>(j)] >= data_.size())
      throw std::out_of_range("image batch: index " + std::to_string(indices[static_cast<size_t>(j)]) + " outside '" +
                              data_.name + "' of " + std::to_string(data_.size()) + " images");
  thread_local std::vector<uint8_t> buffer;
  thread_local std::vector<std::span<const uint8_t>> bytes;
  thread_local std::vector<std::string> errors;
  const auto t0 = Clock::now();
  const uint64_t read = data_.encoded->read(indices.subspan(static_cast<size_t>(row_begin), static_cast<size_t>(row_end - row_begin)),
                                            buffer, bytes, errors);
  counters_.add_read(ns_since(t0), static_cast<int64_t>(read));
  for (int64_t j = row_begin; j < row_end; ++j) {
    const size_t r = static_cast<size_t>(j - row_begin);
    const int64_t index = indices[static_cast<size_t>(j)];
    const uint64_t position = first_position + static_cast<uint64_t>(j);
    std::byte* out = images + j * sample_bytes_;
    labels[j] = data_.labels[static_cast<size_t>(index)];
    std::string problem = errors[r];
    if (problem.empty()) {
      try {
        build_row(bytes[r], key, position, out);
      } catch (const ImageDecodeError& e) {
        problem = data_.encoded->name(index) + ": " + e.what();
      }
    }
    if (problem.empty()) continue;
    labels[j] = bad_images_.replace(index, problem, [&](std::span<const uint8_t> other) {
      try {
        build_row(other, key, position, out);
        return true;
      } catch (const ImageDecodeError&) {
        return false;
      }
    }, skipped);
  }
}

std::unique_ptr<BatchSource> make_image_batch_source(const Dataset& data, bool training, const BatchOptions&,
                                                     BatchFormat format, BadImages bad_images, int rank, InputCounters& counters) {
  return std::make_unique<ImageBatchBuilder>(data, training, format, bad_images, rank, counters);
}

}  // namespace sb
