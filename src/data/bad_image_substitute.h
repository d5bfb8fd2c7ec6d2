// --bad-images skip: the sample that takes the place of one whose file can't be read or decoded. It is
// the next sample after it in the split's order (a folder's listing, the shards' order), wrapping at the
// end, whose file reads and decodes: the same sample whatever the seed, the batch or the rank, so a rerun
// trains on the same images, and a batch fails only when no image of the split decodes.
#pragma once
#include <cstdint>
#include <functional>
#include <span>

#include "data/dataset.h"

namespace sb {

// Offers `decodes` the samples after `bad` in order, those that read, until it returns true; returns
// that sample's index, or -1 when no other sample of `data` decodes.
int64_t substitute_sample(const Dataset& data, int64_t bad,
                          const std::function<bool(int64_t index, std::span<const uint8_t> bytes)>& decodes);

}  // namespace sb
