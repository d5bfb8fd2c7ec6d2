#include "nn/cpu/factory.h"

#include "core/error.h"
#include "nn/cpu/activations.h"
#include "nn/cpu/batchnorm2d.h"
#include "nn/cpu/containers.h"
#include "nn/cpu/conv2d.h"
#include "nn/cpu/dropout.h"
#include "nn/cpu/linear.h"
#include "nn/cpu/pooling.h"

namespace sb::cpu {

template <typename T>
std::unique_ptr<Layer<T>> make_layer(const LayerSpec& spec) {
  switch (spec.kind) {
    case LayerKind::Conv2d: return std::make_unique<Conv2d<T>>(spec);
    case LayerKind::BatchNorm2d: return std::make_unique<BatchNorm2d<T>>(spec);
    case LayerKind::ReLU: return std::make_unique<ReLU<T>>(spec);
    case LayerKind::MaxPool2d: return std::make_unique<MaxPool2d<T>>(spec);
    case LayerKind::AvgPool2d: return std::make_unique<AvgPool2d<T>>(spec);
    case LayerKind::GlobalAvgPool: return std::make_unique<GlobalAvgPool<T>>(spec);
    case LayerKind::Dropout: return std::make_unique<Dropout<T>>(spec);
    case LayerKind::Linear: return std::make_unique<Linear<T>>(spec);
    case LayerKind::Flatten: return std::make_unique<Flatten<T>>(spec);
    case LayerKind::LogSoftmax: return std::make_unique<LogSoftmax<T>>(spec);
    case LayerKind::Sequential: return std::make_unique<Sequential<T>>(spec);
    case LayerKind::Residual: return std::make_unique<Residual<T>>(spec);
  }
  throw UserError(std::string("no CPU layer for kind ") + layer_kind_name(spec.kind));
}

template std::unique_ptr<Layer<float>> make_layer<float>(const LayerSpec&);
template std::unique_ptr<Layer<double>> make_layer<double>(const LayerSpec&);

}  // namespace sb::cpu
