// The optimizer overlap: the CUDA engine queues each gradient bucket's optimizer update on the communication
// stream right after that bucket's all-reduce, instead of one update on the compute stream after every
// all-reduce (PyTorch DDP's "optimizer overlap" comm hook). Host rules only, so that CI tests them.
//
// Safe because backward visits the layers in the reverse of the flat buffer's order and no layer reads
// its parameters (fp32 master or compute-dtype copy, batch-norm scale included) after it reports its
// gradients final, which is where a bucket becomes ready (nn/cuda/context.h, gradients_ready).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "train/engines/bucket_plan.h"
#include "train/train_config.h"

namespace sb {

// Why a run of `ranks` ranks on `config` keeps the one update after every all-reduce, or "" where the
// overlap applies. One rank has no buckets; fp16's dynamic loss scaling must check every gradient for
// overflow before any update; with several micro-batches the buckets are reduced after the last one,
// with nothing left to overlap.
std::string optimizer_overlap_refusal(const TrainConfig& config, int ranks);
inline bool optimizer_overlap_applies(const TrainConfig& config, int ranks) {
  return optimizer_overlap_refusal(config, ranks).empty();
}

// Whether the `launch`-th of a step's `launches` bucket updates advances the optimizer's step counter:
// the last one queued, since every update of the step must read the same step number.
inline bool advances_step_counter(size_t launch, size_t launches) { return launch + 1 == launches; }

// Whether `buckets`, in launch order, cover [0, n) exactly, each non-empty, in descending offsets: then
// one update per bucket updates every parameter once, and the last one launched holds offset 0.
bool buckets_tile_descending(const std::vector<Bucket>& buckets, int64_t n);

}  // namespace sb
