// ResNet-18, -34 and -50 as torchvision.models builds them (He et al., 2016; v1.5: a Bottleneck strides
// in its 3x3 conv): a 7x7 stride-2 stem conv + BN + ReLU, a 3x3 stride-2 max-pool with padding 1, four
// stages of 64/128/256/512 base channels (the first block of stages 2-4 strides by 2), 1x1 conv + BN
// projection shortcuts where the shape changes, a ReLU after each add, global average pooling, fc.
// Initialised as torchvision does: convs kaiming_normal_(fan_out, relu), BN weight 1 and bias 0, fc
// PyTorch's Linear default. On 3x224x224 with 1000 classes: 11,689,512, 21,797,672 and 25,557,032
// parameters.
#pragma once
#include "models/model_input.h"
#include "nn/spec.h"

namespace sb {
LayerSpec resnet18(const ModelInput& input);  // BasicBlock, [2, 2, 2, 2]
LayerSpec resnet34(const ModelInput& input);  // BasicBlock, [3, 4, 6, 3]
LayerSpec resnet50(const ModelInput& input);  // Bottleneck (expansion 4), [3, 4, 6, 3]
}  // namespace sb
