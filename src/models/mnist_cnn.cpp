#include "models/mnist_cnn.h"

namespace sb {

LayerSpec mnist_cnn(const ModelInput& in) {
  // The fc1 width follows the input size (9216 for 28x28), so CIFAR-sized inputs work too.
  const int64_t h = (in.height - 4) / 2, w = (in.width - 4) / 2;
  return sequential("", {
      conv2d("conv1", in.channels, 32, 3, 1, 0, true),
      relu("relu1"),
      conv2d("conv2", 32, 64, 3, 1, 0, true),
      relu("relu2"),
      maxpool2d("pool", 2, 2),
      dropout("dropout1", 0.25),
      flatten("flatten"),
      linear("fc1", 64 * h * w, 128, true),
      relu("relu3"),
      dropout("dropout2", 0.5),
      linear("fc2", 128, in.classes, true),
      log_softmax("log_softmax"),
  });
}

}  // namespace sb
