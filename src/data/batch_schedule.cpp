#include "data/batch_schedule.h"

#include <algorithm>
#include <utility>

namespace sb {

BatchSchedule::BatchSchedule(int64_t dataset_size, int world_size, int rank, uint64_t seed, bool drop_last,
                             int64_t batch_size, std::vector<int64_t> shard_sizes)
    : sampler_(dataset_size, world_size, rank, true, seed, drop_last, std::move(shard_sizes)),
      batch_size_(batch_size),
      batches_per_epoch_(num_batches(sampler_.num_samples(), batch_size, drop_last)),
      samples_per_epoch_(std::min(sampler_.num_samples(), batches_per_epoch_ * batch_size)) {}

std::optional<ScheduledBatch> BatchSchedule::at(int64_t epoch, uint64_t position) const {
  if (position % static_cast<uint64_t>(batch_size_) != 0) return std::nullopt;
  const int64_t b = static_cast<int64_t>(position / static_cast<uint64_t>(batch_size_));
  if (b >= batches_per_epoch_) return std::nullopt;
  return ScheduledBatch{epoch, b, position};
}

ScheduledBatch BatchSchedule::after(const ScheduledBatch& b) const {
  if (b.batch + 1 < batches_per_epoch_)
    return ScheduledBatch{b.epoch, b.batch + 1, b.first_position + static_cast<uint64_t>(batch_size_)};
  return ScheduledBatch{b.epoch + 1, 0, 0};
}

std::span<const int64_t> BatchSchedule::indices(const ScheduledBatch& b) {
  EpochIndices* held = nullptr;
  for (EpochIndices& e : cached_)
    if (e.epoch == b.epoch) held = &e;
  if (!held) {
    // Replace the older of the two.
    held = cached_[0].epoch <= cached_[1].epoch ? &cached_[0] : &cached_[1];
    held->epoch = b.epoch;
    held->indices = sampler_.indices(b.epoch);
  }
  const int64_t begin = b.batch * batch_size_;
  const int64_t end = std::min(begin + batch_size_, samples_per_epoch_);
  return std::span<const int64_t>(held->indices).subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
}

}  // namespace sb
