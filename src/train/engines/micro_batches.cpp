#include "train/engines/micro_batches.h"

#include <algorithm>
#include <stdexcept>

#include "data/sampler.h"

namespace sb {

std::vector<std::vector<int64_t>> step_batches(const std::vector<int64_t>& indices, int64_t micro_batch,
                                               int accumulate_steps, bool drop_last) {
  if (accumulate_steps < 1) throw std::invalid_argument("step_batches: accumulate_steps must be at least 1");
  const std::vector<std::vector<int64_t>> micro = split_batches(indices, micro_batch, drop_last);
  if (accumulate_steps == 1) return micro;
  std::vector<std::vector<int64_t>> steps;
  const size_t k = static_cast<size_t>(accumulate_steps);
  for (size_t first = 0; first < micro.size(); first += k) {
    std::vector<int64_t>& step = steps.emplace_back();
    for (size_t m = first; m < std::min(first + k, micro.size()); ++m) step.insert(step.end(), micro[m].begin(), micro[m].end());
  }
  return steps;
}

std::vector<std::span<const int64_t>> micro_batches(std::span<const int64_t> step, int64_t micro_batch, int accumulate_steps) {
  if (micro_batch < 1) throw std::invalid_argument("micro_batches: micro_batch must be at least 1");
  std::vector<std::span<const int64_t>> out;
  if (accumulate_steps == 1) return {step};
  const size_t size = static_cast<size_t>(micro_batch);
  for (size_t begin = 0; begin < step.size(); begin += size) out.push_back(step.subspan(begin, std::min(size, step.size() - begin)));
  return out;
}

}  // namespace sb
