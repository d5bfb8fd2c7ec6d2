// ResNet-18, CIFAR variant (`resnet18-cifar`): a 3x3 stem (no stem max-pool), [2,2,2,2] basic blocks of 64/128/256/512
// channels, 1x1 conv + BN projection shortcuts, a ReLU after each add, global average pooling, fc.
// 11,173,962 parameters on 3x32x32 with 10 classes. torchvision's ResNet-18 is `resnet18` (resnet.h).
#pragma once
#include "models/model_input.h"
#include "nn/spec.h"

namespace sb {
LayerSpec resnet18_cifar(const ModelInput& input);
}
