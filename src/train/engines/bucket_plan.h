// How the flat gradient buffer is cut into all-reduce buckets (DDP's scheme, host-only so that CI tests
// it). Backward finishes the parameters from the last to the first, so buckets are formed in that order
// and each is launched as soon as backward has finished all of its tensors.
#pragma once
#include <cstdint>
#include <vector>

#include "nn/spec.h"

namespace sb {

struct Bucket {
  int64_t begin = 0, end = 0;  // element range of the flat gradient buffer
};

// Buckets aligned to parameter-tensor boundaries, ordered by descending offset (the order in which they
// become ready). Each closes once it holds at least `bucket_elements`. The last bucket launched holds
// the first layers' gradients, and its all-reduce cannot overlap backward: it is kept to the longest run
// of leading tensors totalling at most `tail_elements` (at least one tensor), so that the bucket before
// it starts while backward still works through those first layers.
std::vector<Bucket> plan_buckets(const std::vector<ParamSpec>& params, int64_t bucket_elements, int64_t tail_elements);

// --bucket-mib as fp32 gradient elements, at least one.
inline int64_t bucket_elements_of_mib(double bucket_mib) {
  constexpr double kBytesPerMiB = 1024.0 * 1024.0;
  const int64_t elements = static_cast<int64_t>(bucket_mib * kBytesPerMiB / sizeof(float));
  return elements < 1 ? 1 : elements;
}

// The tail limit used for a given bucket size: an eighth of it.
inline int64_t default_tail_elements(int64_t bucket_elements) { return bucket_elements / 8; }

}  // namespace sb
