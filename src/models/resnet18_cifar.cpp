#include "models/resnet18_cifar.h"

#include <string>

namespace sb {
namespace {

LayerSpec basic_block(const std::string& name, int64_t in, int64_t out, int64_t stride) {
  LayerSpec main = sequential(name + ".main", {
      conv2d(name + ".conv1", in, out, 3, stride, 1, false), batchnorm2d(name + ".bn1", out), relu(name + ".relu1"),
      conv2d(name + ".conv2", out, out, 3, 1, 1, false), batchnorm2d(name + ".bn2", out),
  });
  std::vector<LayerSpec> shortcut;
  if (stride != 1 || in != out) {
    shortcut.push_back(sequential(name + ".shortcut", {
        conv2d(name + ".shortcut.0", in, out, 1, stride, 0, false), batchnorm2d(name + ".shortcut.1", out)}));
  }
  return sequential(name, {residual(name + ".sum", std::move(main), std::move(shortcut)), relu(name + ".relu2")});
}

}  // namespace

LayerSpec resnet18_cifar(const ModelInput& in) {
  std::vector<LayerSpec> layers = {
      conv2d("conv1", in.channels, 64, 3, 1, 1, false), batchnorm2d("bn1", 64), relu("relu")};
  const int64_t widths[4] = {64, 128, 256, 512};
  int64_t channels = 64;
  for (int stage = 0; stage < 4; ++stage) {
    for (int b = 0; b < 2; ++b) {
      const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      const std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(b);
      layers.push_back(basic_block(name, channels, widths[stage], stride));
      channels = widths[stage];
    }
  }
  layers.push_back(global_avgpool("avgpool"));
  layers.push_back(flatten("flatten"));
  layers.push_back(linear("fc", 512, in.classes, true));
  return sequential("", std::move(layers));
}

}  // namespace sb
