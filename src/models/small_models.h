// Smaller models for quick studies:
//  - cifar-cnn: the PyTorch CIFAR-10 tutorial Net (conv 5x5 ->6, maxpool, conv 5x5 ->16, maxpool,
//    fc 120, fc 84, fc classes), with ReLUs.
//  - mlp: flatten, fc 512, ReLU, fc 512, ReLU, fc classes.
//  - resnet18: the CIFAR variant of ResNet-18 (3x3 stem, no stem max-pool, [2,2,2,2] basic blocks of
//    64/128/256/512 channels, 1x1 conv + BN projection shortcuts, ReLU after each add).
#pragma once
#include "models/model_input.h"
#include "nn/spec.h"

namespace sb {
LayerSpec cifar_cnn(const ModelInput& input);
LayerSpec mlp(const ModelInput& input);
LayerSpec resnet18(const ModelInput& input);
}  // namespace sb
