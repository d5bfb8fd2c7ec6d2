// A model's default recipe (models/registry.h): the optimizer, schedule and batch of the model's guide,
// taken by a run for every recipe option its command line does not give. Resolved once, after the
// command line is read; what the run records, hashes and prints are the resolved values.
#pragma once
#include <functional>
#include <string>
#include <string_view>

#include "train/train_config.h"

namespace sb {

// Sets each option of config.model's recipe that `given` (an option's name without the dashes) says
// the command line did not give, through the option's own row. An optimizer option of the recipe
// (--lr, --momentum, --weight-decay, ...) belongs to the recipe's optimizer: when --optimizer is given
// and names another, those are left at their general defaults. An unknown model has no recipe (the
// model's own check refuses it later). With image files (--data imagefolder:, tars:), --image-size takes
// the model's input side and --val-resize its 256/224 multiple where the command line does not give them.
void apply_model_recipe(TrainConfig& config, const std::function<bool(std::string_view option)>& given);

// One model's recipe as command-line options: "--optimizer adadelta --lr 1.0 ... --batch-size 64".
std::string recipe_options(const std::string& model);

// --help's section listing every model's recipe.
std::string recipe_help();

}  // namespace sb
