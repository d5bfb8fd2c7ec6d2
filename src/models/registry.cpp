#include "models/registry.h"

#include "core/error.h"
#include "models/mnist_cnn.h"
#include "models/small_models.h"
#include "models/wide_resnet.h"

namespace sb {

const std::vector<ModelInfo>& model_catalog() {
  static const std::vector<ModelInfo> catalog = {
      {"mnist-cnn", "PyTorch examples MNIST Net (2 conv, 2 fc, dropout, log-softmax)", true,
       {{"optimizer", "adadelta"}, {"lr", "1.0"}, {"scheduler", "step"}, {"step-size", "1"}, {"gamma", "0.7"},
        {"batch-size", "64"}}},
      {"wrn", "Wide ResNet of the CIFAR-100 guide (16/160/320/640 channels)", false,
       {{"optimizer", "sgd"}, {"lr", "0.01"}, {"batch-size", "256"}}},
      {"cifar-cnn", "PyTorch CIFAR-10 tutorial CNN (2 conv, 3 fc)", false,
       {{"optimizer", "sgd"}, {"lr", "0.001"}, {"momentum", "0.9"}, {"batch-size", "4"}}},
      {"mlp", "3-layer MLP (512, 512)", false, {{"optimizer", "sgd"}, {"lr", "0.01"}, {"batch-size", "64"}}},
      {"resnet18", "ResNet-18, CIFAR variant", false,
       {{"optimizer", "sgd"}, {"lr", "0.1"}, {"momentum", "0.9"}, {"weight-decay", "5e-4"}, {"scheduler", "cosine"},
        {"batch-size", "128"}}},
  };
  return catalog;
}

const ModelInfo& model_info(const std::string& name) {
  std::string valid;
  for (const auto& m : model_catalog()) {
    if (m.name == name) return m;
    valid += (valid.empty() ? "" : ", ") + m.name;
  }
  throw UserError("unknown model '" + name + "'; valid models: " + valid);
}

LayerSpec build_model(const std::string& name, const ModelInput& input) {
  model_info(name);
  LayerSpec spec;
  if (name == "mnist-cnn") spec = mnist_cnn(input);
  else if (name == "wrn") spec = wide_resnet(input);
  else if (name == "cifar-cnn") spec = cifar_cnn(input);
  else if (name == "mlp") spec = mlp(input);
  else spec = resnet18(input);
  try {
    output_shape(spec, Shape{1, input.channels, input.height, input.width});
  } catch (const UserError& e) {
    throw UserError("model '" + name + "' does not fit " + std::to_string(input.channels) + "x" +
                    std::to_string(input.height) + "x" + std::to_string(input.width) + " inputs: " + e.what());
  }
  return spec;
}

}  // namespace sb
