// Which implementation BatchNorm2d runs on the CUDA backend (ContextOptions::batchnorm_path; docs/cudnn.md,
// "Batch-norm paths"). Runs take Auto, the first that has an engine, in the order below; the GPU tests force
// each other value in turn (tests/gpu/test_layers_batchnorm_paths), and a layer whose forced path cannot run
// stops with an error that names the path and the layer. Declared without CUDA, so that the names are
// unit-tested on every backend.
#pragma once
#include <span>

#include "core/enum_names.h"

namespace sb {

enum class BatchNormPath {
  Auto,       // Train: graph (ReLU fused, then not), then legacy; Eval: graph, then legacy
  Graph,      // cuDNN graphs NORM_FORWARD (training or inference phase) and NORM_BACKWARD
  Pointwise,  // Eval only: y = x * a[c] + b[c] as a pointwise cuDNN graph
  Legacy,     // the deprecated cudnnBatchNormalization* calls (bn_legacy.h), ReLU as our kernel
};

// auto, graph, pointwise, legacy: the names in refusals and test names (core/enum_names.h reads the table).
std::span<const EnumName<BatchNormPath>> enum_names(BatchNormPath);

}  // namespace sb
