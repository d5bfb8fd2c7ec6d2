// Which samples each rank trains on in an epoch, with the semantics of PyTorch's
// torch.utils.data.distributed.DistributedSampler (so runs are comparable with DDP):
//  - the epoch's order is philox_permutation(N, seed + epoch) when shuffling, else 0..N-1; it is the
//    same on every rank because every rank computes it from the same seed;
//  - without drop_last the order is padded to total_size = W * ceil(N/W) by repeating it from the
//    start (element k of the padded order is order[k % N]); with drop_last it is cut to
//    W * floor(N/W);
//  - rank r takes positions r, r+W, r+2W, ... of that order (torch's interleaving).
// Tar shards (shard_sizes given: shard s holds the shard_sizes[s] samples after those of the shards
// before it) are read in sequence instead, as WebDataset assigns them:
//  - the epoch's shard order is philox_permutation(S, seed + epoch) when shuffling, else 0..S-1;
//  - rank r takes the shards at places r, r+W, r+2W, ... of that order, and reads their samples in file
//    order, one shard after another;
//  - every rank takes num_samples of its list (ceil(N/W), or floor with drop_last), repeating the list
//    from its start when it is shorter, so that the ranks step together.
// Data knows no MPI: rank and world size are plain integers.
#pragma once
#include <cstdint>
#include <vector>

namespace sb {

class DistributedSampler {
 public:
  // Throws UserError when the dataset is empty; std::invalid_argument for world_size < 1 or a rank
  // outside [0, world_size) (a bug in the caller).
  // With shard_sizes (summing to dataset_size), a UserError when there are fewer shards than ranks.
  DistributedSampler(int64_t dataset_size, int world_size, int rank, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false, std::vector<int64_t> shard_sizes = {});

  int64_t num_samples() const { return num_samples_; }  // per rank and epoch
  int64_t total_size() const { return num_samples_ * world_size_; }
  // This rank's dataset indices for the epoch, in training order (num_samples() of them).
  std::vector<int64_t> indices(int64_t epoch) const;

 private:
  std::vector<int64_t> shard_indices(int64_t epoch) const;

  int64_t dataset_size_;
  int world_size_;
  int rank_;
  bool shuffle_;
  uint64_t seed_;
  int64_t num_samples_;
  std::vector<int64_t> shard_sizes_, shard_starts_;
};

// The number of batches of batch_size in `count` samples: the last partial batch counts unless
// drop_last.
int64_t num_batches(int64_t count, int64_t batch_size, bool drop_last);

// Cuts a rank's index list into consecutive batches of batch_size; the last, shorter batch is kept
// unless drop_last. Throws UserError for batch_size < 1.
std::vector<std::vector<int64_t>> split_batches(const std::vector<int64_t>& indices, int64_t batch_size,
                                                bool drop_last);

}  // namespace sb
