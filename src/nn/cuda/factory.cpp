#include "nn/cuda/factory.h"

#include "core/error.h"
#include "nn/cuda/activations.h"
#include "nn/cuda/batchnorm2d.h"
#include "nn/cuda/containers.h"
#include "nn/cuda/conv2d.h"
#include "nn/cuda/conv_pool_run.h"
#include "nn/cuda/dropout.h"
#include "nn/cuda/first_conv.h"
#include "nn/cuda/linear.h"
#include "nn/cuda/pooling.h"

namespace sb::cuda {

std::unique_ptr<Layer> make_layer(const LayerSpec& spec, Context& ctx) {
  switch (spec.kind) {
    case LayerKind::Conv2d: return std::make_unique<Conv2d>(spec, ctx);
    case LayerKind::BatchNorm2d: return std::make_unique<BatchNorm2d>(spec, ctx);
    case LayerKind::ReLU: return std::make_unique<ReLU>(spec, ctx);
    case LayerKind::MaxPool2d:
    case LayerKind::AvgPool2d:
    case LayerKind::GlobalAvgPool: return std::make_unique<Pool2d>(spec, ctx);
    case LayerKind::Dropout: return std::make_unique<Dropout>(spec, ctx);
    case LayerKind::Linear: return std::make_unique<Linear>(spec, ctx);
    case LayerKind::Flatten: return std::make_unique<Flatten>(spec, ctx);
    case LayerKind::LogSoftmax: return std::make_unique<LogSoftmax>(spec, ctx);
    case LayerKind::Sequential: return std::make_unique<Sequential>(spec, ctx);
    case LayerKind::Residual: return std::make_unique<Residual>(spec, ctx);
  }
  throw UserError(std::string("no CUDA layer for kind ") + layer_kind_name(spec.kind));
}

std::unique_ptr<Layer> make_network_root(const LayerSpec& spec, Context& ctx, bool input_gradient) {
  if (spec.kind == LayerKind::Sequential) return std::make_unique<Sequential>(spec, ctx, false, !input_gradient);
  return make_layer(spec, ctx);
}

std::unique_ptr<Layer> make_fused_layer(const std::vector<LayerSpec>& run, FusionPath path, Context& ctx) {
  switch (path) {
    case FusionPath::FirstConv: return std::make_unique<FirstConv>(run.at(0), run.size() > 1, ctx);
    case FusionPath::ConvReluPool: return std::make_unique<ConvReluPoolRun>(run, ctx);
    case FusionPath::LinearRelu: {
      auto linear = std::make_unique<Linear>(run.at(0), ctx);
      linear->fuse_relu(run.size() > 2 ? &run[2] : nullptr);
      return linear;
    }
    default: break;
  }
  fatal(std::string("make_fused_layer: no fused layer for the plan step '") + fusion_path_name(path) + "'");
}

}  // namespace sb::cuda
