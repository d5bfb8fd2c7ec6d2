#include "predict/gradient_ready.h"

#include <algorithm>
#include <stdexcept>

namespace sb::predict {
namespace {

// "block1.conv1.weight" -> "block1.conv1"; a parameter without a dot belongs to an unnamed layer.
std::string layer_of(const std::string& param_name) {
  const size_t dot = param_name.rfind('.');
  return dot == std::string::npos ? std::string() : param_name.substr(0, dot);
}

}  // namespace

GradientReadyCurve::GradientReadyCurve(std::vector<Point> points, int64_t total_elements) : points_(std::move(points)) {
  points_.push_back({total_elements, 0.0});
  std::sort(points_.begin(), points_.end(), [](const Point& a, const Point& b) { return a.offset < b.offset; });
  // Lower offsets are never final before higher ones: a noisy record must not run backwards.
  for (size_t i = points_.size() - 1; i-- > 0;) points_[i].fraction = std::max(points_[i].fraction, points_[i + 1].fraction);
}

GradientReadyCurve GradientReadyCurve::from_layer_flops(const std::vector<LayerFlops>& layers, const std::vector<ParamSpec>& params) {
  if (params.empty()) throw std::invalid_argument("a model without parameters has no gradients to all-reduce");
  double total = 0;
  for (const LayerFlops& l : layers) total += l.forward_flops;
  // Backward from the last layer: the share done once each layer is finished.
  std::vector<double> done_after(layers.size());
  double done = 0;
  for (size_t i = layers.size(); i-- > 0;) {
    done += layers[i].forward_flops;
    done_after[i] = total > 0 ? done / total : 1.0;
  }
  std::vector<Point> points;
  size_t layer = 0;
  for (const ParamSpec& p : params) {  // both lists are depth-first: walk them together
    const std::string name = layer_of(p.name);
    while (layer < layers.size() && layers[layer].name != name) ++layer;
    if (layer == layers.size()) throw std::invalid_argument("parameter '" + p.name + "' belongs to no layer of the FLOP count");
    points.push_back({p.offset, done_after[layer]});
  }
  return GradientReadyCurve(std::move(points), params.back().offset + params.back().shape.numel());
}

GradientReadyCurve GradientReadyCurve::from_recorded(const std::vector<Bucket>& buckets, const std::vector<double>& ready_s,
                                                     double backward_s, int64_t total_elements) {
  if (buckets.size() != ready_s.size())
    throw std::invalid_argument(std::to_string(ready_s.size()) + " recorded ready times for a plan of " + std::to_string(buckets.size()) +
                                (buckets.size() == 1 ? " bucket" : " buckets"));
  if (!(backward_s > 0)) throw std::invalid_argument("recorded ready times need a positive backward time");
  std::vector<Point> points;
  for (size_t i = 0; i < buckets.size(); ++i) points.push_back({buckets[i].begin, std::clamp(ready_s[i] / backward_s, 0.0, 1.0)});
  return GradientReadyCurve(std::move(points), total_elements);
}

double GradientReadyCurve::fraction_at(int64_t offset) const {
  const auto above = std::lower_bound(points_.begin(), points_.end(), offset,
                                      [](const Point& p, int64_t x) { return p.offset < x; });
  if (above == points_.end()) return 0.0;  // past the end: nothing to wait for
  if (above->offset == offset || above == points_.begin()) return above->fraction;
  const Point& below = *(above - 1);
  const double t = static_cast<double>(offset - below.offset) / static_cast<double>(above->offset - below.offset);
  return below.fraction + t * (above->fraction - below.fraction);
}

std::vector<double> GradientReadyCurve::bucket_ready_fractions(const std::vector<Bucket>& buckets) const {
  std::vector<double> out;
  for (const Bucket& b : buckets) out.push_back(fraction_at(b.begin));
  return out;
}

}  // namespace sb::predict
