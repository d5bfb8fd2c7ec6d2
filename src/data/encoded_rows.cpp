#include "data/encoded_rows.h"

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "data/image/encoded_images.h"
#include "data/image/image_decoder.h"
#include "data/image_batch.h"

namespace sb {

EncodedRowPool::EncodedRowPool(const std::byte* ring, size_t ring_bytes)
    : ring_(ring), bytes_(ring_bytes / sizeof(EncodedRow)), problems_(ring_bytes / sizeof(EncodedRow)) {}

size_t EncodedRowPool::slot_of(const EncodedRow* record) const {
  const auto offset = reinterpret_cast<const std::byte*>(record) - ring_;
  if (offset < 0 || static_cast<size_t>(offset) / sizeof(EncodedRow) >= bytes_.size())
    throw std::logic_error("EncodedRowPool: a record outside the ring");
  return static_cast<size_t>(offset) / sizeof(EncodedRow);
}

EncodedRowSource::EncodedRowSource(const Dataset& data, bool training, EncodedRowPool& pool, InputCounters& counters)
    : data_(data), training_(training), pool_(pool), counters_(counters) {
  if (!data.streamed()) throw std::invalid_argument("EncodedRowSource: not a data set of image files");
}

void EncodedRowSource::fill(std::span<const int64_t> indices, const AugmentKey& key, uint64_t first_position,
                            int64_t row_begin, int64_t row_end, std::byte* images, int32_t* labels) const {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  thread_local std::vector<uint8_t> buffer;
  thread_local std::vector<std::span<const uint8_t>> bytes;
  thread_local std::vector<std::string> errors;
  const auto rows = indices.subspan(static_cast<size_t>(row_begin), static_cast<size_t>(row_end - row_begin));
  const uint64_t read = data_.encoded->read(rows, buffer, bytes, errors);
  for (int64_t j = row_begin; j < row_end; ++j) {
    const size_t r = static_cast<size_t>(j - row_begin);
    const int64_t index = indices[static_cast<size_t>(j)];
    auto* record = reinterpret_cast<EncodedRow*>(images + j * sample_bytes());
    *record = EncodedRow{};
    record->label = labels[j] = data_.labels[static_cast<size_t>(index)];
    record->index = index;
    std::string& problem = pool_.problem_of(record);
    problem = errors[r];
    if (problem.empty()) {
      try {
        const ImageSize size = read_image_size(bytes[r]);
        record->width = size.width;
        record->height = size.height;
        record->box = image_crop_box(data_, training_, key, first_position + static_cast<uint64_t>(j), size.width, size.height);
      } catch (const ImageDecodeError& e) {
        problem = data_.encoded->name(index) + ": " + e.what();
      }
    }
    std::vector<uint8_t>& own = pool_.bytes_of(record);
    own.assign(bytes[r].begin(), bytes[r].end());
    record->bytes = own.data();
    record->size = own.size();
    record->problem = problem.empty() ? nullptr : &problem;
  }
  counters_.add_read(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count(), static_cast<int64_t>(read));
}

}  // namespace sb
