// Instantiates the CUDA layer for a spec (containers included) on a context, and the layers of the fused
// patterns that the containers' planner (nn/fusion_plan.h) chooses.
#pragma once
#include <memory>
#include <vector>

#include "nn/cuda/context.h"
#include "nn/cuda/layer.h"
#include "nn/fusion_plan.h"
#include "nn/spec.h"

namespace sb::cuda {
std::unique_ptr<Layer> make_layer(const LayerSpec& spec, Context& ctx);

// The network's root: as make_layer, except that, unless input_gradient, a root Sequential knows that
// nothing reads its input gradient (its first layer may skip it).
std::unique_ptr<Layer> make_network_root(const LayerSpec& spec, Context& ctx, bool input_gradient);

// The layer of a small-network pattern: `run` holds the specs the plan step covers, `path` its choice
// (FirstConv, ConvReluPool or LinearRelu).
std::unique_ptr<Layer> make_fused_layer(const std::vector<LayerSpec>& run, FusionPath path, Context& ctx);
}  // namespace sb::cuda
