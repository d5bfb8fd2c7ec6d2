// Instantiates the CPU layer for a spec (containers included).
#pragma once
#include <memory>

#include "nn/cpu/layer.h"
#include "nn/spec.h"

namespace sb::cpu {
template <typename T>
std::unique_ptr<Layer<T>> make_layer(const LayerSpec& spec);
}  // namespace sb::cpu
