#include "nn/flops.h"

namespace sb {
namespace {
// Returns the output shape of `spec` for `in` (batch 1) and adds the layer's forward FLOPs to `flops`;
// appends each leaf layer's own count to `per_layer` when it is given.
Shape walk(const LayerSpec& spec, const Shape& in, double& flops, std::vector<LayerFlops>* per_layer = nullptr) {
  switch (spec.kind) {
    case LayerKind::Sequential: {
      Shape s = in;
      for (const auto& c : spec.children) s = walk(c, s, flops, per_layer);
      return s;
    }
    case LayerKind::Residual: {
      const Shape out = walk(spec.children.at(0), in, flops, per_layer);
      if (spec.children.size() > 1) walk(spec.children[1], in, flops, per_layer);
      return out;
    }
    default:
      break;
  }
  const Shape out = output_shape(spec, in);
  const double before = flops;
  if (spec.kind == LayerKind::Conv2d) {
    flops += 2.0 * static_cast<double>(spec.in * spec.kernel * spec.kernel) * static_cast<double>(out.numel());
  } else if (spec.kind == LayerKind::Linear) {
    flops += 2.0 * static_cast<double>(spec.in) * static_cast<double>(spec.out);
  }
  if (per_layer) per_layer->push_back({spec.name, flops - before});
  return out;
}
}  // namespace

double forward_flops_per_sample(const LayerSpec& spec, const Shape& chw) {
  double flops = 0;
  walk(spec, Shape{1, chw[0], chw[1], chw[2]}, flops);
  return flops;
}

std::vector<LayerFlops> forward_flops_per_layer(const LayerSpec& spec, const Shape& chw) {
  double flops = 0;
  std::vector<LayerFlops> per_layer;
  walk(spec, Shape{1, chw[0], chw[1], chw[2]}, flops, &per_layer);
  return per_layer;
}

}  // namespace sb
