#include "models/resnet.h"

#include <string>

namespace sb {
namespace {

// torchvision's conv: no bias, weights from kaiming_normal_(mode='fan_out', nonlinearity='relu').
LayerSpec conv(const std::string& name, int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  LayerSpec c = conv2d(name, in, out, kernel, stride, kernel / 2, false);
  c.weight_init = ParamInit::KaimingNormalFanOut;
  return c;
}

// The shortcut of a block whose shape changes: a strided 1x1 conv + BN; none (identity) otherwise.
std::vector<LayerSpec> downsample(const std::string& name, int64_t in, int64_t out, int64_t stride) {
  if (stride == 1 && in == out) return {};
  return {sequential(name + ".downsample", {conv(name + ".downsample.0", in, out, 1, stride),
                                            batchnorm2d(name + ".downsample.1", out)})};
}

LayerSpec block(const std::string& name, std::vector<LayerSpec> main, std::vector<LayerSpec> shortcut) {
  return sequential(name, {residual(name + ".sum", sequential(name + ".main", std::move(main)), std::move(shortcut)),
                           relu(name + ".relu")});
}

// 3x3 (strided) + 3x3; width out.
LayerSpec basic_block(const std::string& name, int64_t in, int64_t width, int64_t stride) {
  return block(name,
               {conv(name + ".conv1", in, width, 3, stride), batchnorm2d(name + ".bn1", width), relu(name + ".relu1"),
                conv(name + ".conv2", width, width, 3, 1), batchnorm2d(name + ".bn2", width)},
               downsample(name, in, width, stride));
}

// 1x1 reduce, 3x3 (strided: v1.5), 1x1 expand to 4 x width.
LayerSpec bottleneck(const std::string& name, int64_t in, int64_t width, int64_t stride) {
  const int64_t out = 4 * width;
  return block(name,
               {conv(name + ".conv1", in, width, 1, 1), batchnorm2d(name + ".bn1", width), relu(name + ".relu1"),
                conv(name + ".conv2", width, width, 3, stride), batchnorm2d(name + ".bn2", width), relu(name + ".relu2"),
                conv(name + ".conv3", width, out, 1, 1), batchnorm2d(name + ".bn3", out)},
               downsample(name, in, out, stride));
}

using BlockBuilder = LayerSpec (*)(const std::string&, int64_t, int64_t, int64_t);

LayerSpec resnet(const ModelInput& in, BlockBuilder make_block, int64_t expansion, const int (&blocks)[4]) {
  std::vector<LayerSpec> layers = {conv("conv1", in.channels, 64, 7, 2), batchnorm2d("bn1", 64), relu("relu"),
                                   maxpool2d("maxpool", 3, 2, 1)};
  int64_t channels = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = int64_t{64} << stage;
    for (int b = 0; b < blocks[stage]; ++b) {
      const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
      layers.push_back(make_block("layer" + std::to_string(stage + 1) + "." + std::to_string(b), channels, width, stride));
      channels = width * expansion;
    }
  }
  layers.push_back(global_avgpool("avgpool"));
  layers.push_back(flatten("flatten"));
  layers.push_back(linear("fc", channels, in.classes, true));
  return sequential("", std::move(layers));
}

}  // namespace

LayerSpec resnet18(const ModelInput& in) { return resnet(in, basic_block, 1, {2, 2, 2, 2}); }
LayerSpec resnet34(const ModelInput& in) { return resnet(in, basic_block, 1, {3, 4, 6, 3}); }
LayerSpec resnet50(const ModelInput& in) { return resnet(in, bottleneck, 4, {3, 4, 6, 3}); }

}  // namespace sb
