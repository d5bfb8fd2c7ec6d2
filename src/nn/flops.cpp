#include "nn/flops.h"

namespace sb {
namespace {
// Returns the output shape of `spec` for `in` (batch 1) and adds the layer's forward FLOPs to `flops`.
Shape walk(const LayerSpec& spec, const Shape& in, double& flops) {
  switch (spec.kind) {
    case LayerKind::Sequential: {
      Shape s = in;
      for (const auto& c : spec.children) s = walk(c, s, flops);
      return s;
    }
    case LayerKind::Residual: {
      const Shape out = walk(spec.children.at(0), in, flops);
      if (spec.children.size() > 1) walk(spec.children[1], in, flops);
      return out;
    }
    default:
      break;
  }
  const Shape out = output_shape(spec, in);
  if (spec.kind == LayerKind::Conv2d) {
    flops += 2.0 * static_cast<double>(spec.in * spec.kernel * spec.kernel) * static_cast<double>(out.numel());
  } else if (spec.kind == LayerKind::Linear) {
    flops += 2.0 * static_cast<double>(spec.in) * static_cast<double>(spec.out);
  }
  return out;
}
}  // namespace

double forward_flops_per_sample(const LayerSpec& spec, const Shape& chw) {
  double flops = 0;
  walk(spec, Shape{1, chw[0], chw[1], chw[2]}, flops);
  return flops;
}

}  // namespace sb
