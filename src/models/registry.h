// Models by name, for the CLI and the tests.
#pragma once
#include <string>
#include <vector>

#include "models/model_input.h"
#include "nn/spec.h"

namespace sb {

struct ModelInfo {
  std::string name;
  std::string description;
  // True when the network ends in LogSoftmax (trained with NLL); false when it ends in logits
  // (trained with cross-entropy).
  bool outputs_log_probabilities = false;
};

const std::vector<ModelInfo>& model_catalog();
const ModelInfo& model_info(const std::string& name);  // throws UserError listing the valid names
// Builds the spec and checks that it accepts the input shape (UserError otherwise).
LayerSpec build_model(const std::string& name, const ModelInput& input);

}  // namespace sb
