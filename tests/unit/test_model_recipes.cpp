// Each model's default recipe (train/model_recipe.h): what a run with no optimizer options trains with
// (the ResNets' evaluation batch included), that a given option wins, that another optimizer does not inherit the recipe's rate, and that
// configurations stored before the recipes keep their meaning on a resume.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "models/registry.h"
#include "train/checkpoint/resume_check.h"
#include "train/model_recipe.h"
#include "train/train_config.h"
#include "train/train_options.h"
#include "user_error_text.h"

namespace sb {
namespace {

using testing::refusal;

// The configuration of `--model model` plus the options in `given`, already set in `config`.
TrainConfig resolved(TrainConfig config, const std::set<std::string>& given = {}) {
  apply_model_recipe(config, [&given](std::string_view option) { return given.count(std::string(option)) > 0; });
  return config;
}
TrainConfig of_model(const std::string& model) {
  TrainConfig c;
  c.model = model;
  return c;
}

TEST(ModelRecipes, MnistCnnWithoutOptimizerOptionsTrainsAsTheMnistGuide) {
  const TrainConfig c = resolved(of_model("mnist-cnn"));
  EXPECT_EQ(c.optimizer, OptimizerKind::Adadelta);
  EXPECT_EQ(c.lr, 1.0);
  EXPECT_EQ(c.scheduler, ScheduleKind::Step);
  EXPECT_EQ(c.step_size, 1);
  EXPECT_EQ(c.gamma, 0.7);
  EXPECT_EQ(c.batch_size, 64);
}

TEST(ModelRecipes, WrnTrainsAsTheWrnGuide) {
  const TrainConfig c = resolved(of_model("wrn"));
  EXPECT_EQ(c.optimizer, OptimizerKind::Sgd);
  EXPECT_EQ(c.lr, 0.01);
  EXPECT_EQ(c.momentum, 0.0);
  EXPECT_EQ(c.scheduler, ScheduleKind::None);
  EXPECT_EQ(c.batch_size, 256);
}

TEST(ModelRecipes, TheResNetsTrainAsTorchvisionsReferenceAndEvaluateAtTheTrainingBatch) {
  for (const char* model : {"resnet18", "resnet34", "resnet50"}) {
    const TrainConfig c = resolved(of_model(model));
    EXPECT_EQ(c.optimizer, OptimizerKind::Sgd) << model;
    EXPECT_EQ(c.lr, 0.1) << model;
    EXPECT_EQ(c.momentum, 0.9) << model;
    EXPECT_EQ(c.weight_decay, 1e-4) << model;
    EXPECT_EQ(c.scheduler, ScheduleKind::Cosine) << model;
    EXPECT_EQ(c.batch_size, 256) << model;
    // Not the general 1000: evaluation keeps every layer's output, four times training's at 224x224.
    EXPECT_EQ(c.eval_batch_size, 256) << model;
  }
  TrainConfig given = of_model("resnet50");
  given.eval_batch_size = 1000;
  EXPECT_EQ(resolved(given, {"eval-batch-size"}).eval_batch_size, 1000) << "a given --eval-batch-size wins";
  EXPECT_EQ(resolved(of_model("wrn")).eval_batch_size, TrainConfig{}.eval_batch_size) << "other recipes keep 1000";
}

TEST(ModelRecipes, AGivenOptionWinsOverTheRecipe) {
  TrainConfig given = of_model("mnist-cnn");
  given.lr = 0.5;
  given.batch_size = 32;
  const TrainConfig c = resolved(given, {"lr", "batch-size"});
  EXPECT_EQ(c.lr, 0.5);
  EXPECT_EQ(c.batch_size, 32);
  EXPECT_EQ(c.optimizer, OptimizerKind::Adadelta);  // the options not given still come from the recipe
  EXPECT_EQ(c.gamma, 0.7);
}

TEST(ModelRecipes, AnotherOptimizerDoesNotInheritTheRecipesOptimizerOptions) {
  TrainConfig given = of_model("mnist-cnn");
  given.optimizer = OptimizerKind::Adam;
  TrainConfig c = resolved(given, {"optimizer"});
  EXPECT_EQ(c.optimizer, OptimizerKind::Adam);
  EXPECT_EQ(c.lr, TrainConfig{}.lr) << "Adadelta's rate of 1.0 is not Adam's";
  EXPECT_EQ(c.scheduler, ScheduleKind::Step);  // the schedule and the batch are not the optimizer's
  EXPECT_EQ(c.batch_size, 64);

  given = of_model("resnet18-cifar");
  given.optimizer = OptimizerKind::AdamW;
  c = resolved(given, {"optimizer"});
  EXPECT_EQ(c.momentum, TrainConfig{}.momentum);
  EXPECT_FALSE(c.weight_decay.has_value()) << "AdamW keeps its own default weight decay";
  EXPECT_EQ(c.batch_size, 128);
}

TEST(ModelRecipes, NamingTheRecipesOwnOptimizerKeepsItsOptions) {
  TrainConfig given = of_model("mnist-cnn");
  given.optimizer = OptimizerKind::Adadelta;
  EXPECT_EQ(resolved(given, {"optimizer"}).lr, 1.0);
}

TEST(ModelRecipes, EveryRecipeNamesOptionRowsAndIsAValidConfiguration) {
  for (const ModelInfo& m : model_catalog()) {
    SCOPED_TRACE(m.name);
    EXPECT_FALSE(m.recipe.empty());
    std::set<std::string> named;
    for (const RecipeOption& entry : m.recipe) {
      EXPECT_NE(train_option_named(entry.option), nullptr) << entry.option;
      EXPECT_TRUE(named.insert(entry.option).second) << "--" << entry.option << " twice";
    }
    EXPECT_TRUE(named.count("optimizer") && named.count("lr") && named.count("batch-size"))
        << "a recipe says at least which optimizer, at which rate, with which batch";
    EXPECT_EQ(refusal([&] { resolved(of_model(m.name)).validate(); }), "");
  }
}

TEST(ModelRecipes, AnUnknownModelHasNoRecipe) {
  const TrainConfig c = resolved(of_model("alexnet"));
  TrainConfig want;
  want.model = "alexnet";
  EXPECT_EQ(c.to_json(), want.to_json());
}

TEST(ModelRecipes, HelpListsEachModelsRecipe) {
  const std::string help = recipe_help();
  EXPECT_NE(help.find("  mnist-cnn   --optimizer adadelta --lr 1.0 --scheduler step --step-size 1 --gamma 0.7 --batch-size 64\n"),
            std::string::npos) << help;
  for (const ModelInfo& m : model_catalog()) {
    const size_t line = help.find("  " + m.name + " ");
    ASSERT_NE(line, std::string::npos) << m.name;
    const std::string row = help.substr(line, help.find('\n', line) - line);
    EXPECT_EQ(row.find("--fold-bn-statistics") != std::string::npos, m.fp16_folds_bn_statistics) << row;
  }
}

// A configuration stored before the recipes (and before --accumulate-steps): `train --model mnist-cnn`
// then trained with SGD at 0.01. It records its resolved optimizer options, so it still reads as that run.
std::string stored_before_recipes() {
  std::string json = TrainConfig{}.to_json();
  const std::string key = "\"accumulate_steps\":1,";
  const size_t at = json.find(key);
  if (at != std::string::npos) json.erase(at, key.size());
  return json;
}

TEST(ModelRecipes, AConfigurationStoredBeforeTheRecipesKeepsItsMeaning) {
  const std::string old = stored_before_recipes();
  ASSERT_EQ(old.find("accumulate_steps"), std::string::npos);
  const TrainConfig read = TrainConfig::from_json(old, "checkpoint old.h5");
  EXPECT_EQ(read.model, "mnist-cnn");
  EXPECT_EQ(read.optimizer, OptimizerKind::Sgd);
  EXPECT_EQ(read.lr, 0.01);
  EXPECT_EQ(read.accumulate_steps, 1);

  // Resumed with today's plain `--model mnist-cnn` (the recipe's Adadelta): refused, naming the stored value.
  const std::string message = refusal([&] {
    check_same_run_options(old, "checkpoint old.h5 was written with", resolved(of_model("mnist-cnn")).to_json(), "this command gives");
  });
  EXPECT_NE(message.find("checkpoint old.h5 was written with"), std::string::npos) << message;
  // Resumed with the options it was run with, given explicitly: the same run.
  TrainConfig explicit_sgd = of_model("mnist-cnn");
  EXPECT_EQ(refusal([&] {
              check_same_run_options(old, "checkpoint", resolved(explicit_sgd, {"optimizer", "lr", "scheduler", "batch-size"}).to_json(),
                                     "this command");
            }),
            "");
}

TEST(ModelRecipes, AResumeKeepsTheAccumulationSteps) {
  TrainConfig stored;
  stored.accumulate_steps = 2;
  TrainConfig given = stored;
  given.accumulate_steps = 4;
  const std::string message = refusal([&] { check_same_run_options(stored.to_json(), "checkpoint", given.to_json(), "this command"); });
  EXPECT_EQ(message.rfind("--accumulate-steps: checkpoint 2, this command 4", 0), 0u) << message;
  // A configuration stored before the option stepped after every batch: K = 1 continues it, K = 2 does not.
  EXPECT_EQ(refusal([&] { check_same_run_options(stored_before_recipes(), "checkpoint", TrainConfig{}.to_json(), "this command"); }), "");
  EXPECT_NE(refusal([&] { check_same_run_options(stored_before_recipes(), "checkpoint", stored.to_json(), "this command"); }), "");
}

}  // namespace
}  // namespace sb
