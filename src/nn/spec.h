// A backend-neutral description of a network. Models build a LayerSpec tree once; the CPU and CUDA
// backends instantiate it. Parameter order, names, shapes and initialisation come from the spec alone,
// so both backends share one flat-buffer layout and one seeded initialisation.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace sb {

enum class LayerKind {
  Conv2d,         // in, out, kernel, stride, pad, bias
  BatchNorm2d,    // in (channels), eps, momentum; params weight, bias; buffers running_mean, running_var
  ReLU,
  MaxPool2d,      // kernel, stride, pad (padded cells never win)
  AvgPool2d,      // kernel, stride
  GlobalAvgPool,  // N,C,H,W -> N,C,1,1
  Dropout,        // p
  Linear,         // in, out, bias
  Flatten,        // N,C,H,W -> N,C*H*W
  LogSoftmax,     // over dim 1 of N,C
  Sequential,     // children in order
  Residual,       // children[0] main branch; children[1] shortcut when present (identity otherwise)
};

const char* layer_kind_name(LayerKind kind);

enum class ParamInit {
  KaimingUniformA5,     // U(-b, b), b = gain*sqrt(3/fan_in), gain = sqrt(2/(1+5)): PyTorch's default
  BiasUniform,          // U(-1/sqrt(fan_in), 1/sqrt(fan_in))
  KaimingNormalFanOut,  // N(0, 2/fan_out): kaiming_normal_(mode='fan_out', nonlinearity='relu')
  Ones,
  Zeros,
};

struct LayerSpec {
  LayerKind kind = LayerKind::Sequential;
  std::string name;  // dotted path used for parameter names, e.g. "block1.conv1"
  int64_t in = 0, out = 0;
  int64_t kernel = 1, stride = 1, pad = 0;
  bool bias = false;
  double p = 0.0;  // dropout probability
  double eps = 1e-5, momentum = 0.1;
  // The initialisation of a Conv2d's, Linear's or BatchNorm2d's weight; unset: PyTorch's default for the
  // layer (KaimingUniformA5 for Conv2d and Linear, Ones for BatchNorm2d). Biases keep their defaults.
  std::optional<ParamInit> weight_init;
  std::vector<LayerSpec> children;
};

// Spec constructors, so that models read like the PyTorch modules they mirror.
LayerSpec conv2d(std::string name, int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad,
                 bool bias);
LayerSpec batchnorm2d(std::string name, int64_t channels);
LayerSpec relu(std::string name);
LayerSpec maxpool2d(std::string name, int64_t kernel, int64_t stride, int64_t pad = 0);
LayerSpec avgpool2d(std::string name, int64_t kernel, int64_t stride);
LayerSpec global_avgpool(std::string name);
LayerSpec dropout(std::string name, double p);
LayerSpec linear(std::string name, int64_t in, int64_t out, bool bias);
LayerSpec flatten(std::string name);
LayerSpec log_softmax(std::string name);
LayerSpec sequential(std::string name, std::vector<LayerSpec> children);
LayerSpec residual(std::string name, LayerSpec main, std::vector<LayerSpec> shortcut);

// One tensor in a flat buffer.
struct ParamSpec {
  std::string name;  // e.g. "conv1.weight"
  Shape shape;
  ParamInit init = ParamInit::Zeros;
  int64_t fan_in = 1;
  int64_t fan_out = 1;  // KaimingNormalFanOut's fan
  int64_t offset = 0;  // elements from the start of its flat buffer
};

// Learnable parameters of a single (non-container) layer, in the order PyTorch lists them.
std::vector<ParamSpec> layer_params(const LayerSpec& spec);
// A Conv2d's weight elements (out x in x kernel x kernel): where its bias starts in the layer's parameters.
int64_t conv_weight_count(const LayerSpec& conv);
// Non-learnable state (BN running statistics) of a single layer.
std::vector<ParamSpec> layer_buffers(const LayerSpec& spec);

// All parameters and buffers of a tree in depth-first order, with offsets filled in.
std::vector<ParamSpec> collect_params(const LayerSpec& root);
std::vector<ParamSpec> collect_buffers(const LayerSpec& root);
int64_t count_elements(const std::vector<ParamSpec>& specs);

// Sets the weight of the last BatchNorm2d of every residual main branch that ends in one to zero
// (torchvision's zero_init_residual), so that each block starts as its shortcut. Returns how many it set.
int zero_init_residual(LayerSpec& root);

// Output shape of a layer (containers included) for an NCHW input shape; throws UserError on a
// mismatch (e.g. a Linear whose in-features differ from the input).
Shape output_shape(const LayerSpec& spec, const Shape& input);

// Fills a flat buffer (float) following the specs' ParamInit, deterministically from the seed.
// Each tensor draws from its own Philox stream (keyed by seed, stream = tensor index), so adding a layer
// at the end never changes the earlier tensors.
void initialize_flat(const std::vector<ParamSpec>& specs, uint64_t seed, float* flat);

}  // namespace sb
