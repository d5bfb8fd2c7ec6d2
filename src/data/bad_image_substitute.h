// --bad-images: what a batch does with a sample whose file can't be read or decoded, one policy for the
// CPU decoder (image_batch.h) and the GPU decoder (cuda/gpu_decode_source.h).
//   fail: the job ends with one sentence naming the file and the rank;
//   skip: the file is counted, and the row takes the next sample after it in the split's order (a
//         folder's listing, the shards' order), wrapping at the end, whose file reads and decodes, with its
//         label: the same sample whatever the seed, the batch or the rank, so a rerun trains on the same
//         images, and a batch fails only when no image of the split decodes.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "data/dataset.h"
#include "data/image_decoding.h"
#include "data/input_counters.h"

namespace sb {

// Offers `decodes` the samples after `bad` in order, those that read, until it returns true; returns
// that sample's index, or -1 when no other sample of `data` decodes.
int64_t substitute_sample(const Dataset& data, int64_t bad,
                          const std::function<bool(int64_t index, std::span<const uint8_t> bytes)>& decodes);

class BadImagePolicy {
 public:
  // `data` (image files) and `counters` must outlive the policy.
  BadImagePolicy(const Dataset& data, BadImages mode, int rank, InputCounters& counters);

  // The row of sample `bad`, which failed with `problem` (naming its file): throws ImageDecodeError naming
  // the rank (fail), or notes the file in `skipped` (in the counters when null), builds the row from the
  // first substitute that `decodes` takes and returns that sample's label (skip); throws when none decodes.
  int32_t replace(int64_t bad, const std::string& problem, const std::function<bool(std::span<const uint8_t> bytes)>& decodes,
                  SkippedFiles* skipped) const;

 private:
  const Dataset& data_;
  BadImages mode_;
  int rank_;
  InputCounters& counters_;
};

}  // namespace sb
