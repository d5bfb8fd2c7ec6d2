// --network: the nodes of the cluster and the link between them, for the inter-node level of the
// all-reduce model when no comm file measured it:
//   nodes=2,gpus-per-node=4,inter=ib:200Gbps[,latency=5us]
// `inter` is NAME:BANDWIDTH, the bandwidth of each GPU's own network link (a node with one NIC shared by
// its g GPUs gives 1/g of it), in Gbps (10^9 bits/s) or GB/s (10^9 bytes/s); `latency` is the time of
// one ring step across it (us, ms or ns; 5us when not given); `nodes` only sets the default GPU counts
// predicted. Every key may be left out, but `latency` needs `inter`.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "predict/ring_model.h"

namespace sb::predict {

inline constexpr double kDefaultInterLatencySeconds = 5e-6;

struct NetworkSpec {
  int64_t nodes = 0;          // 0: not given
  int64_t gpus_per_node = 0;  // 0: not given
  std::string link_name;      // "ib", "roce", ...; "" without `inter`
  std::optional<RingLevel> inter;
};

// Throws sb::UserError naming --network, the part at fault and the form it expects.
NetworkSpec parse_network_spec(const std::string& text);

}  // namespace sb::predict
