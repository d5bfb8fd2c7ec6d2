#include "train/model_recipe.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "core/error.h"
#include "data/dataset_spec.h"
#include "data/image_data_sets.h"
#include "models/registry.h"
#include "train/train_options.h"

namespace sb {
namespace {

// The options that configure the optimizer itself (not the schedule or the batch): a recipe's values of
// these only fit its own optimizer.
constexpr std::array<std::string_view, 9> kOptimizerOptions = {"lr",  "momentum", "dampening", "nesterov", "weight-decay",
                                                               "rho", "eps",      "beta1",     "beta2"};

bool is_optimizer_option(std::string_view option) {
  return std::find(kOptimizerOptions.begin(), kOptimizerOptions.end(), option) != kOptimizerOptions.end();
}

void set_option(TrainConfig& config, const RecipeOption& entry) {
  const TrainOption* row = train_option_named(entry.option);
  if (!row) throw std::logic_error(std::string("a model recipe names --") + entry.option + ", which no option row has");
  row->field.parse(config, entry.value, row->name);
}

// Image files: the crops take the model's input side and evaluation's resize keeps torchvision's
// 256/224, where the command line does not size them (a 32-pixel model is not grown to 224).
void follow_model_input(TrainConfig& config, const ModelInfo& model, const std::function<bool(std::string_view option)>& given) {
  bool image_files = false;
  try {
    image_files = streamed(parse_dataset_spec(config.data));
  } catch (const UserError&) {
    return;  // refused with its own message later
  }
  if (!image_files) return;
  if (!given("image-size")) config.image_size = static_cast<int>(model.home_input.height);
  if (!given("val-resize")) config.val_resize = val_resize_for(config.image_size);
}

}  // namespace

void apply_model_recipe(TrainConfig& config, const std::function<bool(std::string_view option)>& given) {
  const ModelInfo* model = find_model(config.model);
  if (!model) return;
  bool own_optimizer = true;  // the optimizer the run uses is the recipe's
  if (given("optimizer")) {
    for (const RecipeOption& entry : model->recipe) {
      if (std::string_view(entry.option) != "optimizer") continue;
      TrainConfig recipe;
      set_option(recipe, entry);
      own_optimizer = recipe.optimizer == config.optimizer;
    }
  }
  for (const RecipeOption& entry : model->recipe) {
    if (given(entry.option)) continue;
    if (!own_optimizer && is_optimizer_option(entry.option)) continue;
    set_option(config, entry);
  }
  follow_model_input(config, *model, given);
}

std::string recipe_options(const std::string& model) {
  std::string text;
  if (const ModelInfo* m = find_model(model)) {
    for (const RecipeOption& entry : m->recipe) text += (text.empty() ? "--" : " --") + std::string(entry.option) + " " + entry.value;
  }
  return text;
}

std::string recipe_help() {
  std::string text =
      "\ndefault recipes: --model NAME sets these options unless the command line gives them (a given option\n"
      "wins; with another --optimizer the recipe's --lr, --momentum and --weight-decay are not applied); an\n"
      "option no recipe sets takes the default in brackets above:\n";
  for (const ModelInfo& m : model_catalog()) {
    std::string name = "  " + m.name;
    name.resize(std::max<size_t>(name.size() + 1, 14), ' ');
    text += name + recipe_options(m.name) + (m.fp16_folds_bn_statistics ? "; in fp16 and nhwc --fold-bn-statistics" : "") + "\n";
  }
  return text;
}

}  // namespace sb
