// The all-reduce time at any GPU count: one ring over every GPU (flat), or, across nodes, the
// hierarchical all-reduce: a reduce-scatter inside each node, an all-reduce of each GPU's 1/g share
// between the nodes, an all-gather inside each node. With a ring at each level that costs
//   t_intra(g, S) + t_inter(nodes, S/g),
// which is the flat ring of the intra level when there is one node. At the rank count the comm sweep
// was measured on, and within its sizes, the level's time is the measured curve itself (interpolated
// between neighbouring sizes on log-log axes), as the sweep is the better witness there; elsewhere the
// fitted ring carries it to other counts and sizes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "predict/ring_model.h"

namespace sb::predict {

// A measured all-reduce curve: in-place times by size (sorted by bytes) on `ranks` ranks.
struct MeasuredCurve {
  int64_t ranks = 0;
  std::vector<TimedSize> points;
  // The measured time at `bytes` on `ranks` ranks: log-log interpolation between the neighbouring sizes;
  // none at another rank count or outside the measured sizes.
  std::optional<double> seconds(int64_t at_ranks, double bytes) const;
};

struct AllreduceModel {
  RingLevel intra;                  // inside a node (the comm file)
  MeasuredCurve intra_measured;     // the comm file's own points (none: the ring alone)
  std::optional<RingLevel> inter;   // between nodes (--network or --comm-inter); none: one flat ring
  int64_t gpus_per_node = 0;        // with `inter`: the GPUs of each node

  // Seconds of one all-reduce of `bytes` per GPU over `gpus` GPUs.
  double seconds(int64_t gpus, double bytes) const;
  // Why `gpus` cannot be laid out on whole nodes ("" when it can): past one node the count must be a
  // multiple of gpus_per_node.
  std::string layout_problem(int64_t gpus) const;
  int64_t nodes(int64_t gpus) const;  // 1 for the flat model
  // Whether the all-reduce at `gpus` takes the sweep's measured curve (one node, the sweep's rank count)
  // rather than the fitted ring.
  bool uses_measured_curve(int64_t gpus) const { return nodes(gpus) == 1 && gpus == intra_measured.ranks; }
};

}  // namespace sb::predict
