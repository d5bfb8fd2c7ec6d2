#include "predict/allreduce_model.h"

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

double AllreduceModel::seconds(int64_t gpus, double bytes) const {
  if (const std::string problem = layout_problem(gpus); !problem.empty()) throw std::invalid_argument(problem);
  const int64_t node_count = nodes(gpus);
  if (node_count == 1) return ring_allreduce_seconds(intra, gpus, bytes);
  const double share = bytes / static_cast<double>(gpus_per_node);
  return ring_allreduce_seconds(intra, gpus_per_node, bytes) + ring_allreduce_seconds(*inter, node_count, share);
}

}  // namespace sb::predict
