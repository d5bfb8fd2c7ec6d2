#include "predict/allreduce_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace sb::predict {

int64_t AllreduceModel::nodes(int64_t gpus) const {
  if (!inter || gpus <= gpus_per_node) return 1;
  return gpus / gpus_per_node;
}

std::string AllreduceModel::layout_problem(int64_t gpus) const {
  if (!inter || gpus <= gpus_per_node || gpus % gpus_per_node == 0) return "";
  return std::to_string(gpus) + " GPUs do not fill whole nodes of " + std::to_string(gpus_per_node) + " GPUs";
}

std::optional<double> MeasuredCurve::seconds(int64_t at_ranks, double bytes) const {
  if (at_ranks != ranks || points.empty() || bytes < points.front().bytes || bytes > points.back().bytes)
    return std::nullopt;
  const auto above = std::lower_bound(points.begin(), points.end(), bytes,
                                      [](const TimedSize& p, double b) { return p.bytes < b; });
  if (above->bytes == bytes || above == points.begin()) return above->seconds;
  const TimedSize& lo = *(above - 1);
  const TimedSize& hi = *above;
  const double f = std::log(bytes / lo.bytes) / std::log(hi.bytes / lo.bytes);
  return std::exp(std::log(lo.seconds) + f * (std::log(hi.seconds) - std::log(lo.seconds)));
}

double AllreduceModel::seconds(int64_t gpus, double bytes) const {
  if (const std::string problem = layout_problem(gpus); !problem.empty()) throw std::invalid_argument(problem);
  const int64_t node_count = nodes(gpus);
  const int64_t intra_ranks = node_count == 1 ? gpus : gpus_per_node;
  const double intra_s =
      intra_measured.seconds(intra_ranks, bytes).value_or(ring_allreduce_seconds(intra, intra_ranks, bytes));
  if (node_count == 1) return intra_s;
  const double share = bytes / static_cast<double>(gpus_per_node);
  return intra_s + ring_allreduce_seconds(*inter, node_count, share);
}

}  // namespace sb::predict
