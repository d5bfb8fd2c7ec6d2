// The PyTorch examples' MNIST Net (examples/mnist/main.py), layer for layer:
// conv 1->32 3x3, ReLU, conv 32->64 3x3, ReLU, maxpool 2, dropout 0.25, flatten, fc ->128, ReLU,
// dropout 0.5, fc 128->classes, log-softmax. 1,199,882 parameters on 1x28x28 with 10 classes.
#pragma once
#include "models/model_input.h"
#include "nn/spec.h"

namespace sb {
LayerSpec mnist_cnn(const ModelInput& input);
}
