// The training batches a rank will ask for, in order, so that a host pipeline can build them ahead: the
// trainer's own sampler (DistributedSampler, shuffled by the seed) cut into batches, epoch after epoch.
// Only a prediction: whoever uses it checks each batch against the one actually asked for.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "data/sampler.h"

namespace sb {

// A batch of the schedule: the epoch, its number within the epoch and its first sample's position.
struct ScheduledBatch {
  int64_t epoch = 0;
  int64_t batch = 0;
  uint64_t first_position = 0;
};

class BatchSchedule {
 public:
  // shard_sizes: those of a data set of tar shards (sampler.h), else empty.
  BatchSchedule(int64_t dataset_size, int world_size, int rank, uint64_t seed, bool drop_last, int64_t batch_size,
                std::vector<int64_t> shard_sizes = {});

  // The batch of `epoch` whose first sample sits at `position`; nullopt when no batch starts there.
  std::optional<ScheduledBatch> at(int64_t epoch, uint64_t position) const;
  // The batch after `b`: the next of its epoch, else the first of the next epoch.
  ScheduledBatch after(const ScheduledBatch& b) const;
  // b's dataset indices; valid until indices() is asked for an epoch two or more away.
  std::span<const int64_t> indices(const ScheduledBatch& b);

 private:
  DistributedSampler sampler_;
  int64_t batch_size_;
  int64_t batches_per_epoch_;
  int64_t samples_per_epoch_;  // covered by the epoch's batches (fewer with drop_last)
  // The last two epochs asked for: the current one and the next, which prefetching reaches first.
  struct EpochIndices {
    int64_t epoch = -1;
    std::vector<int64_t> indices;
  };
  EpochIndices cached_[2];
};

}  // namespace sb
