// Which samples each rank trains on in an epoch, with the semantics of PyTorch's
// torch.utils.data.distributed.DistributedSampler (so runs are comparable with DDP):
//  - the epoch's order is philox_permutation(N, seed + epoch) when shuffling, else 0..N-1; it is the
//    same on every rank because every rank computes it from the same seed;
//  - without drop_last the order is padded to total_size = W * ceil(N/W) by repeating it from the
//    start (element k of the padded order is order[k % N]); with drop_last it is cut to
//    W * floor(N/W);
//  - rank r takes positions r, r+W, r+2W, ... of that order (torch's interleaving).
// Data knows no MPI: rank and world size are plain integers.
#pragma once
#include <cstdint>
#include <vector>

namespace sb {

class DistributedSampler {
 public:
  // Throws UserError when the dataset is empty; std::invalid_argument for world_size < 1 or a rank
  // outside [0, world_size) (a bug in the caller).
  DistributedSampler(int64_t dataset_size, int world_size, int rank, bool shuffle = true, uint64_t seed = 0,
                     bool drop_last = false);

  int64_t num_samples() const { return num_samples_; }  // per rank and epoch
  int64_t total_size() const { return num_samples_ * world_size_; }
  // This rank's dataset indices for the epoch, in training order (num_samples() of them).
  std::vector<int64_t> indices(int64_t epoch) const;

 private:
  int64_t dataset_size_;
  int world_size_;
  int rank_;
  bool shuffle_;
  uint64_t seed_;
  int64_t num_samples_;
};

// The number of batches of batch_size in `count` samples: the last partial batch counts unless
// drop_last.
int64_t num_batches(int64_t count, int64_t batch_size, bool drop_last);

// Cuts a rank's index list into consecutive batches of batch_size; the last, shorter batch is kept
// unless drop_last. Throws UserError for batch_size < 1.
std::vector<std::vector<int64_t>> split_batches(const std::vector<int64_t>& indices, int64_t batch_size,
                                                bool drop_last);

}  // namespace sb
