#include "models/cifar_cnn.h"

namespace sb {

LayerSpec cifar_cnn(const ModelInput& in) {
  // The fc1 width follows the input size (16x5x5 for 32x32).
  const int64_t h = ((in.height - 4) / 2 - 4) / 2, w = ((in.width - 4) / 2 - 4) / 2;
  return sequential("", {
      conv2d("conv1", in.channels, 6, 5, 1, 0, true), relu("relu1"), maxpool2d("pool1", 2, 2),
      conv2d("conv2", 6, 16, 5, 1, 0, true), relu("relu2"), maxpool2d("pool2", 2, 2),
      flatten("flatten"),
      linear("fc1", 16 * h * w, 120, true), relu("relu3"),
      linear("fc2", 120, 84, true), relu("relu4"),
      linear("fc3", 84, in.classes, true),
  });
}

}  // namespace sb
