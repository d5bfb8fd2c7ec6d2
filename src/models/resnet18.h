// ResNet-18, CIFAR variant: a 3x3 stem (no stem max-pool), [2,2,2,2] basic blocks of 64/128/256/512
// channels, 1x1 conv + BN projection shortcuts, a ReLU after each add, global average pooling, fc.
// 11,173,962 parameters on 3x32x32 with 10 classes.
#pragma once
#include "models/model_input.h"
#include "nn/spec.h"

namespace sb {
LayerSpec resnet18(const ModelInput& input);
}
