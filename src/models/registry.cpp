#include "models/registry.h"

#include "core/error.h"
#include "models/cifar_cnn.h"
#include "models/mlp.h"
#include "models/mnist_cnn.h"
#include "models/resnet.h"
#include "models/resnet18_cifar.h"
#include "models/wide_resnet.h"

namespace sb {
namespace {

// torchvision's ImageNet reference recipe for its ResNets: SGD, lr 0.1 for a batch of 256, momentum 0.9,
// weight decay 1e-4, here with cosine annealing over the run. The lr is fixed, not scaled with the batch:
// another batch size (or --scale-lr over ranks) is the user's choice. Evaluation at the training batch, as
// the reference evaluates: every layer keeps its output whatever the mode, so the general default of 1000
// would take four times training's activation memory at 224x224.
std::vector<RecipeOption> imagenet_recipe() {
  return {{"optimizer", "sgd"}, {"lr", "0.1"}, {"momentum", "0.9"}, {"weight-decay", "1e-4"}, {"scheduler", "cosine"},
          {"batch-size", "256"}, {"eval-batch-size", "256"}};
}

}  // namespace

const std::vector<ModelInfo>& model_catalog() {
  static const std::vector<ModelInfo> catalog = {
      {"mnist-cnn", "PyTorch examples MNIST Net (2 conv, 2 fc, dropout, log-softmax)", mnist_cnn,
       ModelInput{1, 28, 28, 10}, true,
       {{"optimizer", "adadelta"}, {"lr", "1.0"}, {"scheduler", "step"}, {"step-size", "1"}, {"gamma", "0.7"},
        {"batch-size", "64"}}},
      {"wrn", "Wide ResNet of the CIFAR-100 guide (16/160/320/640 channels)",
       [](const ModelInput& in) { return wide_resnet(in); }, ModelInput{3, 32, 32, 100}, false,
       {{"optimizer", "sgd"}, {"lr", "0.01"}, {"batch-size", "256"}}},
      {"cifar-cnn", "PyTorch CIFAR-10 tutorial CNN (2 conv, 3 fc)", cifar_cnn, ModelInput{3, 32, 32, 10}, false,
       {{"optimizer", "sgd"}, {"lr", "0.001"}, {"momentum", "0.9"}, {"batch-size", "4"}}},
      {"mlp", "3-layer MLP (512, 512)", mlp, ModelInput{1, 28, 28, 10}, false,
       {{"optimizer", "sgd"}, {"lr", "0.01"}, {"batch-size", "64"}}},
      {"resnet18", "torchvision's ResNet-18 (7x7 stem, max-pool, basic blocks [2,2,2,2])", resnet18,
       ModelInput{3, 224, 224, 1000}, false, imagenet_recipe(), true},
      {"resnet34", "torchvision's ResNet-34 (7x7 stem, max-pool, basic blocks [3,4,6,3])", resnet34,
       ModelInput{3, 224, 224, 1000}, false, imagenet_recipe(), true},
      {"resnet50", "torchvision's ResNet-50 v1.5 (7x7 stem, max-pool, bottlenecks [3,4,6,3])", resnet50,
       ModelInput{3, 224, 224, 1000}, false, imagenet_recipe(), true},
      {"resnet18-cifar", "ResNet-18, CIFAR variant (3x3 stem, no max-pool)", resnet18_cifar, ModelInput{3, 32, 32, 10}, false,
       {{"optimizer", "sgd"}, {"lr", "0.1"}, {"momentum", "0.9"}, {"weight-decay", "5e-4"}, {"scheduler", "cosine"},
        {"batch-size", "128"}}},
  };
  return catalog;
}

std::string model_names() {
  std::string names;
  for (const ModelInfo& m : model_catalog()) names += (names.empty() ? "" : ", ") + m.name;
  return names;
}

const ModelInfo* find_model(const std::string& name) {
  for (const ModelInfo& m : model_catalog())
    if (m.name == name) return &m;
  return nullptr;
}

const ModelInfo& model_info(const std::string& name) {
  if (const ModelInfo* m = find_model(name)) return *m;
  throw UserError("unknown model '" + name + "'; valid models: " + model_names());
}

LayerSpec build_model(const std::string& name, const ModelInput& input) {
  const LayerSpec spec = model_info(name).build(input);
  try {
    output_shape(spec, Shape{1, input.channels, input.height, input.width});
  } catch (const UserError& e) {
    throw UserError("model '" + name + "' does not fit " + std::to_string(input.channels) + "x" +
                    std::to_string(input.height) + "x" + std::to_string(input.width) + " inputs: " + e.what());
  }
  return spec;
}

}  // namespace sb
