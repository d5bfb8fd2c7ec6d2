#include "models/wide_resnet.h"

#include <string>

namespace sb {
namespace {

LayerSpec wide_block(const std::string& name, int64_t in, int64_t out, double dropout_p) {
  LayerSpec main = sequential(name + ".main", {
      conv2d(name + ".conv1", in, out, 3, 1, 1, false),
      batchnorm2d(name + ".bn1", out),
      relu(name + ".relu1"),
      dropout(name + ".dropout", dropout_p),
      conv2d(name + ".conv2", out, out, 3, 1, 1, false),
      batchnorm2d(name + ".bn2", out),
      relu(name + ".relu2"),
  });
  std::vector<LayerSpec> shortcut;
  if (in != out) shortcut.push_back(conv2d(name + ".shortcut", in, out, 1, 1, 0, true));
  return residual(name, std::move(main), std::move(shortcut));
}

}  // namespace

LayerSpec wide_resnet(const ModelInput& in, const WideResNetWidths& widths, double dropout_p) {
  const auto& c = widths.channels;
  return sequential("", {
      conv2d("stem.conv", in.channels, c[0], 3, 1, 1, false),
      batchnorm2d("stem.bn", c[0]),
      relu("stem.relu"),
      wide_block("block1", c[0], c[1], dropout_p),
      wide_block("block2", c[1], c[1], dropout_p),
      maxpool2d("pool1", 2, 2),
      wide_block("block3", c[1], c[2], dropout_p),
      wide_block("block4", c[2], c[2], dropout_p),
      maxpool2d("pool2", 2, 2),
      wide_block("block5", c[2], c[3], dropout_p),
      wide_block("block6", c[3], c[3], dropout_p),
      global_avgpool("avgpool"),
      flatten("flatten"),
      linear("fc", c[3], in.classes, true),
  });
}

}  // namespace sb
