#include "data/cpu_batches.h"

#include <algorithm>
#include <future>

namespace sb {

CpuBatches::CpuBatches(const Dataset& train, const Dataset& test, const CpuBatchOptions& options)
    : train_(train), test_(test), options_(options) {
  if (!train.streamed()) return;
  train_source_ = make_batch_source(train, true, options.augmentation, BatchFormat{}, options.bad_images, options.rank, counters_);
  test_source_ = make_batch_source(test, false, options.augmentation, BatchFormat{}, options.bad_images, options.rank, counters_);
}

std::optional<InputTotals> CpuBatches::input_totals() const {
  if (!train_source_) return std::nullopt;
  return counters_.totals();
}

void CpuBatches::build(bool training, std::span<const int64_t> indices, const AugmentKey& key, uint64_t position) {
  const Dataset& data = training ? train_ : test_;
  const BatchSource* source = training ? train_source_.get() : test_source_.get();
  if (source) {
    decode(*source, data, indices, key, position);
    return;
  }
  assemble_batch(data, indices, training ? options_.augmentation : BatchOptions{}, key, position, images_, labels_);
}

void CpuBatches::decode(const BatchSource& source, const Dataset& data, std::span<const int64_t> indices,
                        const AugmentKey& key, uint64_t position) {
  const auto n = static_cast<int64_t>(indices.size());
  images_.resize(Shape{n, data.channels, data.height, data.width});
  labels_.resize(static_cast<size_t>(n));
  auto* out = reinterpret_cast<std::byte*>(images_.data());
  const int64_t parts = std::min<int64_t>(n, options_.workers);
  std::vector<std::future<void>> others;
  for (int64_t p = 1; p < parts; ++p)
    others.push_back(std::async(std::launch::async, [&, p] {
      source.fill(indices, key, position, p * n / parts, (p + 1) * n / parts, out, labels_.data());
    }));
  source.fill(indices, key, position, 0, n / parts, out, labels_.data());
  for (std::future<void>& other : others) other.get();  // rethrows a part's failure
}

}  // namespace sb
