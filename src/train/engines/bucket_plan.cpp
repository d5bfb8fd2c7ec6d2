#include "train/engines/bucket_plan.h"

namespace sb {

std::vector<Bucket> plan_buckets(const std::vector<ParamSpec>& params, int64_t bucket_elements, int64_t tail_elements) {
  if (params.empty()) return {};
  const int64_t total = params.back().offset + params.back().shape.numel();
  // The tail: the leading tensors while they fit in tail_elements (the first one always).
  size_t tail_count = 1;
  while (tail_count < params.size() && params[tail_count].offset + params[tail_count].shape.numel() <= tail_elements)
    ++tail_count;
  if (tail_count == params.size()) return {Bucket{0, total}};
  const int64_t tail_end = params[tail_count].offset;

  std::vector<Bucket> buckets;
  int64_t end = total;
  for (size_t i = params.size(); i-- > tail_count;) {
    const int64_t begin = params[i].offset;
    if (end - begin >= bucket_elements) {
      buckets.push_back({begin, end});
      end = begin;
    }
  }
  if (end > tail_end) buckets.push_back({tail_end, end});
  buckets.push_back({0, tail_end});
  return buckets;
}

}  // namespace sb
