#include "metrics/bucket_ready_samples.h"

#include <stdexcept>
#include <string>

#include "core/median.h"

namespace sb {

void BucketReadySamples::add(std::span<const double> ready_s) {
  if (ready_s.empty()) return;
  if (by_bucket_.empty()) by_bucket_.resize(ready_s.size());
  if (ready_s.size() != by_bucket_.size())
    throw std::invalid_argument("BucketReadySamples::add: " + std::to_string(ready_s.size()) + " buckets after steps of " +
                                std::to_string(by_bucket_.size()));
  for (size_t b = 0; b < ready_s.size(); ++b) by_bucket_[b].push_back(ready_s[b]);
}

std::vector<double> BucketReadySamples::medians() const {
  std::vector<double> out;
  out.reserve(by_bucket_.size());
  for (const std::vector<double>& values : by_bucket_) out.push_back(median_of(values));
  return out;
}

}  // namespace sb
