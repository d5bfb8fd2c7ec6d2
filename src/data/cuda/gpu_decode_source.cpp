#include "data/cuda/gpu_decode_source.h"

#include <chrono>
#include <stdexcept>

#include "core/cuda_check.h"
#include "data/image/encoded_images.h"
#include "data/image/image_decoder.h"
#include "data/image_batch.h"

namespace sb::cuda {

GpuDecoders::GpuDecoders(int64_t max_batch, BadImages bad_images, int rank, InputCounters& counters)
    : device_(-1), max_batch_(max_batch), bad_images_(bad_images), rank_(rank), counters_(counters) {
  CHECK_CUDA(cudaGetDevice(&device_));
}

void GpuDecoders::add_slot(const std::byte* host_rows, void* device_batch) { slots_.emplace_back(host_rows, device_batch); }

void* GpuDecoders::device_batch(const std::byte* host_rows) const {
  for (const auto& [rows, batch] : slots_)
    if (rows == host_rows) return batch;
  throw std::logic_error("GpuDecoders: rows of no known slot");
}

GpuImageDecoder& GpuDecoders::for_this_thread() {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<GpuImageDecoder>& decoder = decoders_[std::this_thread::get_id()];
  if (!decoder) {
    CHECK_CUDA(cudaSetDevice(device_));
    decoder = std::make_unique<GpuImageDecoder>(max_batch_, counters_);
  }
  return *decoder;
}

GpuDecodeSource::GpuDecodeSource(const Dataset& data, bool training, BatchFormat format, GpuDecoders& decoders)
    : data_(data),
      training_(training),
      format_(format),
      device_sample_bytes_(data.sample_bytes() * static_cast<int64_t>(dtype_size(format.dtype))),
      decoders_(decoders),
      bad_images_(data, decoders.bad_images(), decoders.rank(), decoders.counters()) {
  if (!data.streamed() || data.channels != 3) throw std::invalid_argument("GpuDecodeSource: not a data set of RGB image files");
}

DecodeTarget GpuDecodeSource::target_for(std::byte* images, int64_t row_begin) const {
  DecodeTarget target;
  target.out = static_cast<std::byte*>(decoders_.device_batch(images)) + row_begin * device_sample_bytes_;
  target.height = data_.height;
  target.width = data_.width;
  for (int c = 0; c < 3; ++c) {
    target.mean[c] = data_.mean[static_cast<size_t>(c)];
    target.std[c] = data_.std[static_cast<size_t>(c)];
  }
  target.format = format_;
  return target;
}

void GpuDecodeSource::fill(std::span<const int64_t> indices, const AugmentKey& key, uint64_t first_position,
                           int64_t row_begin, int64_t row_end, std::byte* images, int32_t* labels,
                           SkippedFiles* skipped) const {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  thread_local std::vector<uint8_t> buffer;
  thread_local std::vector<std::span<const uint8_t>> bytes;
  thread_local std::vector<std::string> errors, names;
  thread_local std::vector<EncodedRow> rows;
  const auto part = indices.subspan(static_cast<size_t>(row_begin), static_cast<size_t>(row_end - row_begin));
  const uint64_t read = data_.encoded->read(part, buffer, bytes, errors);
  rows.assign(part.size(), EncodedRow{});
  names.assign(part.size(), std::string());
  for (size_t r = 0; r < part.size(); ++r) {
    const int64_t index = part[r];
    labels[row_begin + static_cast<int64_t>(r)] = data_.labels[static_cast<size_t>(index)];
    names[r] = data_.encoded->name(index);
    rows[r].bytes = bytes[r];
    rows[r].problem = errors[r];
  }
  decoders_.counters().add_read(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count(),
                                static_cast<int64_t>(read));
  const CropBoxFor box_for = [&](size_t row, int width, int height) {
    return image_crop_box(data_, training_, key, first_position + static_cast<uint64_t>(row_begin) + row, width, height);
  };
  const SubstituteFor substitute = [&](size_t row, const std::string& problem, DecodedImage& image) {
    return bad_images_.replace(part[row], problem, [&](std::span<const uint8_t> other) {
      try {
        image = decode_image(other);
        return true;
      } catch (const ImageDecodeError&) {
        return false;
      }
    }, skipped);
  };
  decoders_.for_this_thread().decode(rows, names, labels + row_begin, box_for, substitute, target_for(images, row_begin));
}

}  // namespace sb::cuda
