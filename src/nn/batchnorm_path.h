// Which implementation BatchNorm2d runs on the CUDA backend (docs/cudnn.md, "Batch-norm paths"). Auto
// takes the first that has an engine, in the order below; any other value forces that path, and a layer
// whose forced path cannot run stops with an error that names the option and the layer. Declared here,
// without CUDA, so that the option can be parsed and checked on every backend.
#pragma once
#include <string>

namespace sb {

enum class BatchNormPath {
  Auto,       // Train: graph (ReLU fused, then not), then legacy; Eval: graph, pointwise, then legacy
  Graph,      // cuDNN graphs NORM_FORWARD (training or inference phase) and NORM_BACKWARD
  Pointwise,  // Eval only: y = x * a[c] + b[c] as a pointwise cuDNN graph
  Legacy,     // the deprecated cudnnBatchNormalization* calls (bn_legacy.h), ReLU as our kernel
};

// "auto", "graph", "pointwise", "legacy".
const char* batchnorm_path_name(BatchNormPath path);

// The inverse of batchnorm_path_name; anything else is a UserError naming --batchnorm-path and the values.
BatchNormPath parse_batchnorm_path(const std::string& name);

// "auto, graph, pointwise or legacy", for help texts and messages.
std::string batchnorm_path_choices();

}  // namespace sb
