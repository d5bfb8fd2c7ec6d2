// The Wide ResNet of the CIFAR-100 guide. With the default widths {16, 160, 320, 640}, 3 input
// channels and 100 classes it has 17,175,444 parameters:
//   stem: conv3x3 3->16 (no bias), BN, ReLU
//   block 16->160 (1x1 scaling conv with bias on the shortcut), block 160->160, maxpool 2
//   block 160->320 (scaling), block 320->320, maxpool 2
//   block 320->640 (scaling), block 640->640
//   global average pooling, fc 640->classes
// Each block: conv3x3-BN-ReLU, dropout 0.01, conv3x3-BN-ReLU, plus the shortcut (no ReLU after the add).
// The guide's AvgPool2d(7) reads only 7x7 of the 8x8 map a 32x32 input leaves; we use global average
// pooling (docs/decisions.md).
#pragma once
#include <array>

#include "models/model_input.h"
#include "nn/spec.h"

namespace sb {

struct WideResNetWidths {
  std::array<int64_t, 4> channels{16, 160, 320, 640};
};

LayerSpec wide_resnet(const ModelInput& input, const WideResNetWidths& widths = {}, double dropout_p = 0.01);

}  // namespace sb
