// A 3-layer perceptron: flatten, fc 512, ReLU, fc 512, ReLU, fc classes.
#pragma once
#include "models/model_input.h"
#include "nn/spec.h"

namespace sb {
LayerSpec mlp(const ModelInput& input);
}
