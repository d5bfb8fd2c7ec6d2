#include "data/sampler.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "data/shuffle.h"

namespace sb {

DistributedSampler::DistributedSampler(int64_t dataset_size, int world_size, int rank, bool shuffle, uint64_t seed,
                                       bool drop_last, std::vector<int64_t> shard_sizes)
    : dataset_size_(dataset_size), world_size_(world_size), rank_(rank), shuffle_(shuffle), seed_(seed),
      shard_sizes_(std::move(shard_sizes)) {
  if (dataset_size < 1) throw UserError("the dataset is empty: there is nothing to sample");
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw std::invalid_argument("DistributedSampler: rank " + std::to_string(rank) + " of world size " +
                                std::to_string(world_size));
  // torch: ceil((N - W) / W) with drop_last when N % W != 0, which is floor(N / W); else ceil(N / W).
  num_samples_ = drop_last ? dataset_size / world_size : (dataset_size + world_size - 1) / world_size;
  if (shard_sizes_.empty()) return;
  if (std::accumulate(shard_sizes_.begin(), shard_sizes_.end(), int64_t{0}) != dataset_size)
    throw std::invalid_argument("DistributedSampler: the shard sizes do not add up to the data set's size");
  if (static_cast<int64_t>(shard_sizes_.size()) < world_size)
    throw UserError("the data set has " + std::to_string(shard_sizes_.size()) + " tar shard(s) for " +
                    std::to_string(world_size) + " ranks, and each rank reads whole shards; pack it with a smaller "
                    "--shard-size, or run fewer ranks");
  shard_starts_.resize(shard_sizes_.size());
  std::exclusive_scan(shard_sizes_.begin(), shard_sizes_.end(), shard_starts_.begin(), int64_t{0});
}

std::vector<int64_t> DistributedSampler::shard_indices(int64_t epoch) const {
  const auto shards = static_cast<int64_t>(shard_sizes_.size());
  std::vector<int64_t> order;
  if (shuffle_) {
    order = philox_permutation(shards, seed_ + static_cast<uint64_t>(epoch));
  } else {
    order.resize(static_cast<size_t>(shards));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  std::vector<int64_t> list;
  for (int64_t place = rank_; place < shards; place += world_size_) {
    const size_t s = static_cast<size_t>(order[static_cast<size_t>(place)]);
    for (int64_t k = 0; k < shard_sizes_[s]; ++k) list.push_back(shard_starts_[s] + k);
  }
  if (list.empty())
    throw UserError("rank " + std::to_string(rank_) + "'s tar shards of epoch " + std::to_string(epoch) +
                    " hold no samples; pack the data set again");
  std::vector<int64_t> mine(static_cast<size_t>(num_samples_));
  for (int64_t i = 0; i < num_samples_; ++i) mine[static_cast<size_t>(i)] = list[static_cast<size_t>(i) % list.size()];
  return mine;
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  if (!shard_sizes_.empty()) return shard_indices(epoch);
  std::vector<int64_t> order;
  if (shuffle_) {
    order = philox_permutation(dataset_size_, seed_ + static_cast<uint64_t>(epoch));
  } else {
    order.resize(static_cast<size_t>(dataset_size_));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  std::vector<int64_t> mine(static_cast<size_t>(num_samples_));
  for (int64_t i = 0; i < num_samples_; ++i) {
    const int64_t position = rank_ + i * world_size_;  // in the padded (or cut) order
    mine[static_cast<size_t>(i)] = order[static_cast<size_t>(position % dataset_size_)];
  }
  return mine;
}

int64_t num_batches(int64_t count, int64_t batch_size, bool drop_last) {
  if (batch_size < 1) throw UserError("the batch size must be at least 1, not " + std::to_string(batch_size));
  return drop_last ? count / batch_size : (count + batch_size - 1) / batch_size;
}

std::vector<std::vector<int64_t>> split_batches(const std::vector<int64_t>& indices, int64_t batch_size,
                                                bool drop_last) {
  const int64_t count = static_cast<int64_t>(indices.size());
  std::vector<std::vector<int64_t>> batches(static_cast<size_t>(num_batches(count, batch_size, drop_last)));
  for (size_t b = 0; b < batches.size(); ++b) {
    const int64_t begin = static_cast<int64_t>(b) * batch_size;
    const int64_t end = std::min(count, begin + batch_size);
    batches[b].assign(indices.begin() + begin, indices.begin() + end);
  }
  return batches;
}

}  // namespace sb
