// The PyTorch CIFAR-10 tutorial Net: conv 5x5 ->6, ReLU, maxpool 2, conv 5x5 ->16, ReLU, maxpool 2,
// fc 120, ReLU, fc 84, ReLU, fc classes. 62,006 parameters on 3x32x32 with 10 classes.
#pragma once
#include "models/model_input.h"
#include "nn/spec.h"

namespace sb {
LayerSpec cifar_cnn(const ModelInput& input);
}
