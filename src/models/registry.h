// The models, one row each (model_catalog() in registry.cpp): everything scalebench knows about a model
// is in its row: its name and description, the function that builds it, the input it is documented with
// and its default recipe. `train --help`, `comm --comm-model`, `info --models` (which the PyTorch twin,
// bench/sb_torch_models.py, reads) and the tests all read the rows. Adding a model is one file with its
// builder and one row (docs/architecture.md, "Adding a model").
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

// Builds the model for an input shape and class count (layers that follow the input size adapt).
using ModelBuilder = LayerSpec (*)(const ModelInput& input);

struct ModelInfo {
  std::string name;
  std::string description;
  ModelBuilder build = nullptr;
  // The data set the model is documented with, as its sample shape and class count: the gradient size
  // that `comm --comm-model` all-reduces and the PyTorch twin's input (`info --models`).
  ModelInput home_input;
  // True when the network ends in LogSoftmax (trained with NLL); false when it ends in logits
  // (trained with cross-entropy).
  bool outputs_log_probabilities = false;
  // The training recipe of the model's guide: the options a run takes when the command line does not
  // give them (train/model_recipe.h); docs/optimizers.md says where each comes from.
  std::vector<RecipeOption> recipe;
  // True where the batch norms' statistics in the convolutions' epilogues (--fold-bn-statistics) trained
  // faster in fp16: a run of the model in fp16 and NHWC folds them unless the command line says otherwise
  // (TrainConfig::fold_bn_statistics_on; the measurements are in docs/decisions.md).
  bool fp16_folds_bn_statistics = false;
};

const std::vector<ModelInfo>& model_catalog();
// The row of `name`; a UserError naming the value and listing the valid names for an unknown one.
const ModelInfo& model_info(const std::string& name);
// The row of `name`, or nullptr for an unknown one (for callers that leave the refusal to model_info).
const ModelInfo* find_model(const std::string& name);
// The catalog's names in its order, joined by ", " (help texts and refusals).
std::string model_names();
// Builds the spec and checks that it accepts the input shape (UserError otherwise).
LayerSpec build_model(const std::string& name, const ModelInput& input);

}  // namespace sb
