#include "train/engines/optimizer_overlap.h"

namespace sb {

std::string optimizer_overlap_refusal(const TrainConfig& config, int ranks) {
  // One rank has no all-reduce to hide the updates behind: queued beside backward they only compete with it
  // for the GPU (mnist-cnn at batch 64 on an H200: 5-7% slower; the wrn: no change).
  if (ranks < 2) return "one rank has no all-reduce";
  if (config.precision == Precision::FP16)
    return "--precision fp16's loss scaling checks every gradient before any update";
  if (config.accumulate_steps > 1) return "--accumulate-steps above 1 reduces the buckets after the last micro-batch";
  return "";
}

bool buckets_tile_descending(const std::vector<Bucket>& buckets, int64_t n) {
  int64_t next_end = n;
  for (const Bucket& b : buckets) {
    if (b.end != next_end || b.begin >= b.end) return false;
    next_end = b.begin;
  }
  return !buckets.empty() && next_end == 0;
}

}  // namespace sb
