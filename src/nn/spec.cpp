#include "nn/spec.h"

#include <cmath>
#include <numbers>

#include "core/error.h"
#include "core/philox.h"
#include "core/window_extent.h"

namespace sb {

const char* layer_kind_name(LayerKind kind) {
  switch (kind) {
    case LayerKind::Conv2d: return "Conv2d";
    case LayerKind::BatchNorm2d: return "BatchNorm2d";
    case LayerKind::ReLU: return "ReLU";
    case LayerKind::MaxPool2d: return "MaxPool2d";
    case LayerKind::AvgPool2d: return "AvgPool2d";
    case LayerKind::GlobalAvgPool: return "GlobalAvgPool";
    case LayerKind::Dropout: return "Dropout";
    case LayerKind::Linear: return "Linear";
    case LayerKind::Flatten: return "Flatten";
    case LayerKind::LogSoftmax: return "LogSoftmax";
    case LayerKind::Sequential: return "Sequential";
    case LayerKind::Residual: return "Residual";
  }
  return "?";
}

namespace {
LayerSpec make(LayerKind kind, std::string name) {
  LayerSpec s;
  s.kind = kind;
  s.name = std::move(name);
  return s;
}
std::string join(const std::string& prefix, const char* leaf) {
  return prefix.empty() ? std::string(leaf) : prefix + "." + leaf;
}
}  // namespace

LayerSpec conv2d(std::string name, int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad,
                 bool bias) {
  LayerSpec s = make(LayerKind::Conv2d, std::move(name));
  s.in = in; s.out = out; s.kernel = kernel; s.stride = stride; s.pad = pad; s.bias = bias;
  return s;
}
LayerSpec batchnorm2d(std::string name, int64_t channels) {
  LayerSpec s = make(LayerKind::BatchNorm2d, std::move(name));
  s.in = s.out = channels;
  return s;
}
LayerSpec relu(std::string name) { return make(LayerKind::ReLU, std::move(name)); }
LayerSpec maxpool2d(std::string name, int64_t kernel, int64_t stride, int64_t pad) {
  LayerSpec s = make(LayerKind::MaxPool2d, std::move(name));
  s.kernel = kernel; s.stride = stride; s.pad = pad;
  return s;
}
LayerSpec avgpool2d(std::string name, int64_t kernel, int64_t stride) {
  LayerSpec s = make(LayerKind::AvgPool2d, std::move(name));
  s.kernel = kernel; s.stride = stride;
  return s;
}
LayerSpec global_avgpool(std::string name) { return make(LayerKind::GlobalAvgPool, std::move(name)); }
LayerSpec dropout(std::string name, double p) {
  LayerSpec s = make(LayerKind::Dropout, std::move(name));
  s.p = p;
  return s;
}
LayerSpec linear(std::string name, int64_t in, int64_t out, bool bias) {
  LayerSpec s = make(LayerKind::Linear, std::move(name));
  s.in = in; s.out = out; s.bias = bias;
  return s;
}
LayerSpec flatten(std::string name) { return make(LayerKind::Flatten, std::move(name)); }
LayerSpec log_softmax(std::string name) { return make(LayerKind::LogSoftmax, std::move(name)); }
LayerSpec sequential(std::string name, std::vector<LayerSpec> children) {
  LayerSpec s = make(LayerKind::Sequential, std::move(name));
  s.children = std::move(children);
  return s;
}
LayerSpec residual(std::string name, LayerSpec main, std::vector<LayerSpec> shortcut) {
  LayerSpec s = make(LayerKind::Residual, std::move(name));
  s.children.push_back(std::move(main));
  for (auto& c : shortcut) s.children.push_back(std::move(c));
  if (s.children.size() > 2) throw UserError("residual '" + s.name + "' takes at most one shortcut layer");
  return s;
}

int64_t conv_weight_count(const LayerSpec& conv) { return conv.out * conv.in * conv.kernel * conv.kernel; }

std::vector<ParamSpec> layer_params(const LayerSpec& s) {
  std::vector<ParamSpec> p;
  switch (s.kind) {
    case LayerKind::Conv2d: {
      const int64_t fan_in = s.in * s.kernel * s.kernel, fan_out = s.out * s.kernel * s.kernel;
      p.push_back({join(s.name, "weight"), Shape{s.out, s.in, s.kernel, s.kernel},
                   s.weight_init.value_or(ParamInit::KaimingUniformA5), fan_in, fan_out});
      if (s.bias) p.push_back({join(s.name, "bias"), Shape{s.out}, ParamInit::BiasUniform, fan_in});
      break;
    }
    case LayerKind::Linear:
      p.push_back({join(s.name, "weight"), Shape{s.out, s.in}, s.weight_init.value_or(ParamInit::KaimingUniformA5), s.in,
                   s.out});
      if (s.bias) p.push_back({join(s.name, "bias"), Shape{s.out}, ParamInit::BiasUniform, s.in});
      break;
    case LayerKind::BatchNorm2d:
      p.push_back({join(s.name, "weight"), Shape{s.in}, s.weight_init.value_or(ParamInit::Ones), 1});
      p.push_back({join(s.name, "bias"), Shape{s.in}, ParamInit::Zeros, 1});
      break;
    default:
      break;
  }
  return p;
}

std::vector<ParamSpec> layer_buffers(const LayerSpec& s) {
  std::vector<ParamSpec> b;
  if (s.kind == LayerKind::BatchNorm2d) {
    b.push_back({join(s.name, "running_mean"), Shape{s.in}, ParamInit::Zeros, 1});
    b.push_back({join(s.name, "running_var"), Shape{s.in}, ParamInit::Ones, 1});
  }
  return b;
}

namespace {
template <typename F>
void collect(const LayerSpec& s, F&& per_layer, std::vector<ParamSpec>& out) {
  if (s.kind == LayerKind::Sequential || s.kind == LayerKind::Residual) {
    for (const auto& c : s.children) collect(c, per_layer, out);
    return;
  }
  for (auto& p : per_layer(s)) out.push_back(std::move(p));
}
void assign_offsets(std::vector<ParamSpec>& specs) {
  int64_t offset = 0;
  for (auto& p : specs) {
    p.offset = offset;
    offset += p.shape.numel();
  }
}
}  // namespace

std::vector<ParamSpec> collect_params(const LayerSpec& root) {
  std::vector<ParamSpec> out;
  collect(root, layer_params, out);
  assign_offsets(out);
  return out;
}
std::vector<ParamSpec> collect_buffers(const LayerSpec& root) {
  std::vector<ParamSpec> out;
  collect(root, layer_buffers, out);
  assign_offsets(out);
  return out;
}
int64_t count_elements(const std::vector<ParamSpec>& specs) {
  int64_t n = 0;
  for (const auto& p : specs) n += p.shape.numel();
  return n;
}

namespace {
[[noreturn]] void shape_error(const LayerSpec& s, const Shape& in, const std::string& why) {
  throw UserError(std::string(layer_kind_name(s.kind)) + " '" + s.name + "' cannot take input " + in.str() +
                  ": " + why);
}
}  // namespace

Shape output_shape(const LayerSpec& s, const Shape& in) {
  switch (s.kind) {
    case LayerKind::Conv2d: {
      if (in.rank() != 4 || in[1] != s.in) shape_error(s, in, "expects N x " + std::to_string(s.in) + " x H x W");
      const int64_t h = window_extent<int64_t>(in[2], s.kernel, s.stride, s.pad);
      const int64_t w = window_extent<int64_t>(in[3], s.kernel, s.stride, s.pad);
      if (h <= 0 || w <= 0) shape_error(s, in, "the image is smaller than the kernel");
      return Shape{in[0], s.out, h, w};
    }
    case LayerKind::BatchNorm2d:
      if (in.rank() != 4 || in[1] != s.in) shape_error(s, in, "expects N x " + std::to_string(s.in) + " x H x W");
      return in;
    case LayerKind::ReLU:
    case LayerKind::Dropout:
      return in;
    case LayerKind::MaxPool2d:
    case LayerKind::AvgPool2d: {
      if (in.rank() != 4) shape_error(s, in, "expects N x C x H x W");
      // PyTorch's rule: a window starts inside the image or its left padding, so pad <= kernel / 2.
      if (s.pad < 0 || 2 * s.pad > s.kernel) shape_error(s, in, "the padding must lie in [0, kernel / 2]");
      if (s.kind == LayerKind::AvgPool2d && s.pad != 0) shape_error(s, in, "average pooling takes no padding");
      const int64_t h = window_extent<int64_t>(in[2], s.kernel, s.stride, s.pad);
      const int64_t w = window_extent<int64_t>(in[3], s.kernel, s.stride, s.pad);
      if (h <= 0 || w <= 0) shape_error(s, in, "the image is smaller than the window");
      return Shape{in[0], in[1], h, w};
    }
    case LayerKind::GlobalAvgPool:
      if (in.rank() != 4) shape_error(s, in, "expects N x C x H x W");
      return Shape{in[0], in[1], 1, 1};
    case LayerKind::Flatten: {
      if (in.rank() < 2) shape_error(s, in, "expects at least 2 dimensions");
      return Shape{in[0], in.numel() / in[0]};
    }
    case LayerKind::Linear:
      if (in.rank() != 2 || in[1] != s.in) shape_error(s, in, "expects N x " + std::to_string(s.in));
      return Shape{in[0], s.out};
    case LayerKind::LogSoftmax:
      if (in.rank() != 2) shape_error(s, in, "expects N x C");
      return in;
    case LayerKind::Sequential: {
      Shape shape = in;
      for (const auto& c : s.children) shape = output_shape(c, shape);
      return shape;
    }
    case LayerKind::Residual: {
      const Shape main = output_shape(s.children.at(0), in);
      const Shape shortcut = s.children.size() > 1 ? output_shape(s.children[1], in) : in;
      if (main != shortcut) shape_error(s, in, "main branch gives " + main.str() + " but shortcut gives " + shortcut.str());
      return main;
    }
  }
  shape_error(s, in, "unknown layer kind");
}

namespace {
// The last layer of a branch, looking into nested Sequentials; nullptr for an empty one.
LayerSpec* last_layer(LayerSpec& branch) {
  if (branch.kind != LayerKind::Sequential) return &branch;
  for (auto it = branch.children.rbegin(); it != branch.children.rend(); ++it)
    if (LayerSpec* last = last_layer(*it)) return last;
  return nullptr;
}
}  // namespace

int zero_init_residual(LayerSpec& root) {
  int zeroed = 0;
  if (root.kind == LayerKind::Residual) {
    LayerSpec* last = last_layer(root.children.at(0));
    if (last && last->kind == LayerKind::BatchNorm2d) {
      last->weight_init = ParamInit::Zeros;
      ++zeroed;
    }
  }
  for (auto& child : root.children) zeroed += zero_init_residual(child);
  return zeroed;
}

void initialize_flat(const std::vector<ParamSpec>& specs, uint64_t seed, float* flat) {
  for (size_t t = 0; t < specs.size(); ++t) {
    const ParamSpec& p = specs[t];
    float* dst = flat + p.offset;
    const int64_t n = p.shape.numel();
    double bound = 0.0;
    switch (p.init) {
      case ParamInit::Ones:
        for (int64_t i = 0; i < n; ++i) dst[i] = 1.0f;
        continue;
      case ParamInit::Zeros:
        for (int64_t i = 0; i < n; ++i) dst[i] = 0.0f;
        continue;
      case ParamInit::KaimingUniformA5:
        bound = std::sqrt(2.0 / (1.0 + 5.0)) * std::sqrt(3.0 / static_cast<double>(p.fan_in));
        break;
      case ParamInit::BiasUniform:
        bound = 1.0 / std::sqrt(static_cast<double>(p.fan_in));
        break;
      case ParamInit::KaimingNormalFanOut: {
        // Box-Muller over the stream's uniform pairs (2i, 2i+1); 1 - u lies in (0, 1], so the log is finite.
        const double std_dev = std::sqrt(2.0 / static_cast<double>(p.fan_out));
        for (int64_t i = 0; i < n; ++i) {
          const double u1 = 1.0 - philox_uniform_at(seed, t, static_cast<uint64_t>(2 * i));
          const double u2 = philox_uniform_at(seed, t, static_cast<uint64_t>(2 * i + 1));
          const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
          dst[i] = static_cast<float>(std_dev * normal);
        }
        continue;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      const double u = philox_uniform_at(seed, t, static_cast<uint64_t>(i));
      dst[i] = static_cast<float>((2.0 * u - 1.0) * bound);
    }
  }
}

}  // namespace sb
