// Instantiates the CUDA layer for a spec (containers included) on a context.
#pragma once
#include <memory>

#include "nn/cuda/context.h"
#include "nn/cuda/layer.h"
#include "nn/spec.h"

namespace sb::cuda {
std::unique_ptr<Layer> make_layer(const LayerSpec& spec, Context& ctx);
}  // namespace sb::cuda
