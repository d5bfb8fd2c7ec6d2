// Models by name, for the CLI and the tests.
#pragma once
#include <string>
#include <vector>

#include "models/model_input.h"
#include "nn/spec.h"

namespace sb {

// One option of a model's default recipe, as the command line spells it: `--optimizer adadelta` is
// {"optimizer", "adadelta"}. The option rows parse it as they parse the command line.
struct RecipeOption {
  const char* option;  // without the dashes
  const char* value;
};

struct ModelInfo {
  std::string name;
  std::string description;
  // True when the network ends in LogSoftmax (trained with NLL); false when it ends in logits
  // (trained with cross-entropy).
  bool outputs_log_probabilities = false;
  // The training recipe of the model's guide: the options a run takes when the command line does not
  // give them (train/model_recipe.h); docs/optimizers.md says where each comes from.
  std::vector<RecipeOption> recipe;
};

const std::vector<ModelInfo>& model_catalog();
const ModelInfo& model_info(const std::string& name);  // throws UserError listing the valid names
// Builds the spec and checks that it accepts the input shape (UserError otherwise).
LayerSpec build_model(const std::string& name, const ModelInput& input);

}  // namespace sb
