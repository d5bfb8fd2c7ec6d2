// The networks of the PyTorch-oracle fixture (tests/reference/README.md): a model name, an input shape,
// a class count and (for wrn) the widths, built exactly as src/models/ builds them, with dropout on or
// off. Shared by dump_initial_weights and the fixture tests, so that all three build the same spec.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/mnist_cnn.h"
#include "models/model_input.h"
#include "models/registry.h"
#include "models/resnet.h"
#include "models/wide_resnet.h"
#include "nn/spec.h"

namespace sb::reference {

struct ReferenceCase {
  std::string model = "mnist-cnn";  // mnist-cnn, wrn, resnet18, resnet34 or resnet50
  ModelInput input;                 // channels, height, width, classes
  std::array<int64_t, 4> widths{16, 160, 320, 640};  // wrn only
  uint64_t seed = 0;
};

// Every Dropout in the tree becomes the identity (p = 0): the fixture's step is deterministic.
inline void disable_dropout(LayerSpec& spec) {
  if (spec.kind == LayerKind::Dropout) spec.p = 0.0;
  for (LayerSpec& child : spec.children) disable_dropout(child);
}

inline LayerSpec build_case(const ReferenceCase& c, bool dropout) {
  LayerSpec spec;
  if (c.model == "mnist-cnn") {
    spec = mnist_cnn(c.input);
  } else if (c.model == "wrn") {
    WideResNetWidths widths;
    widths.channels = c.widths;
    spec = wide_resnet(c.input, widths);
  } else if (c.model == "resnet18") {
    spec = resnet18(c.input);
  } else if (c.model == "resnet34") {
    spec = resnet34(c.input);
  } else if (c.model == "resnet50") {
    spec = resnet50(c.input);
  } else {
    throw UserError("the reference fixtures cover mnist-cnn, wrn, resnet18, resnet34 and resnet50, not '" + c.model + "'");
  }
  if (!dropout) disable_dropout(spec);
  output_shape(spec, Shape{1, c.input.channels, c.input.height, c.input.width});  // throws on a bad shape
  return spec;
}

// mnist-cnn ends in LogSoftmax (NLL loss); the others in logits (cross-entropy): the model's registry row says.
inline bool outputs_log_probabilities(const ReferenceCase& c) { return model_info(c.model).outputs_log_probabilities; }

// "1x28x28" -> {1, 28, 28}; "8,16,24,32" -> {8, 16, 24, 32}.
inline std::vector<int64_t> parse_ints(const std::string& text, char separator) {
  std::vector<int64_t> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(separator, begin), text.size());
    const std::string part = text.substr(begin, end - begin);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || v <= 0)
      throw UserError("'" + text + "' should be positive whole numbers separated by '" + separator + "'");
    out.push_back(v);
    begin = end + 1;
  }
  return out;
}

}  // namespace sb::reference
