// The gradient buckets' ready times over the steps of a run (seconds from the start of backward, one
// list per step), summarised as the median of each bucket: what `bucket_ready` of a results file holds.
#pragma once
#include <span>
#include <vector>

namespace sb {

class BucketReadySamples {
 public:
  // One step's ready times, in launch order; every step of a run has the same buckets
  // (std::invalid_argument otherwise). An empty list adds nothing.
  void add(std::span<const double> ready_s);
  // Per bucket, the median over the steps added (the mean of the middle two for an even count); empty
  // when no step was added.
  std::vector<double> medians() const;

 private:
  std::vector<std::vector<double>> by_bucket_;
};

}  // namespace sb
