// The all-reduce time at any GPU count: one ring over every GPU (flat), or, across nodes, the
// hierarchical all-reduce: a reduce-scatter inside each node, an all-reduce of each GPU's 1/g share
// between the nodes, an all-gather inside each node. With a ring at each level that costs
//   t_intra(g, S) + t_inter(nodes, S/g),
// which is the flat ring of the intra level when there is one node.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "predict/ring_model.h"

namespace sb::predict {

struct AllreduceModel {
  RingLevel intra;                  // inside a node (the comm file)
  std::optional<RingLevel> inter;   // between nodes (--network or --comm-inter); none: one flat ring
  int64_t gpus_per_node = 0;        // with `inter`: the GPUs of each node

  // Seconds of one all-reduce of `bytes` per GPU over `gpus` GPUs.
  double seconds(int64_t gpus, double bytes) const;
  // Why `gpus` cannot be laid out on whole nodes ("" when it can): past one node the count must be a
  // multiple of gpus_per_node.
  std::string layout_problem(int64_t gpus) const;
  int64_t nodes(int64_t gpus) const;  // 1 for the flat model
};

}  // namespace sb::predict
