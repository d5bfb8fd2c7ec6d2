// `resnet18` named the CIFAR variant (now `resnet18-cifar`) in configurations written before
// `zero_init_residual` was recorded: a resume of such a checkpoint continues under --model resnet18-cifar,
// and is refused under --model resnet18 with a sentence saying that the name's meaning changed.
#include <gtest/gtest.h>

#include <string>

#include "train/checkpoint/resume_check.h"
#include "train/train_config.h"
#include "user_error_text.h"

namespace sb {
namespace {

using testing::refusal;

TrainConfig run_of(const std::string& model) {
  TrainConfig c;
  c.model = model;
  c.data = "synthetic:3x32x32:10:256:64";
  c.epochs = 3;
  c.out = "run.h5";
  c.resume = "run.h5.ckpt.h5";
  return c;
}

// The configuration an older scalebench recorded for a CIFAR ResNet-18 run: no zero_init_residual key.
std::string old_resnet18_json() {
  std::string json = run_of("resnet18").to_json();
  const std::string key = "\"zero_init_residual\":false,";
  const size_t at = json.find(key);
  EXPECT_NE(at, std::string::npos) << json;
  if (at != std::string::npos) json.erase(at, key.size());
  return json;
}

Checkpoint checkpoint_with(const std::string& config_json) {
  Checkpoint c;
  c.config_json = config_json;
  c.world_size = 1;
  c.loop.epoch = 1;
  return c;
}

TEST(RenamedModel, AnOldConfigurationIsToldFromANewOne) {
  EXPECT_TRUE(names_the_cifar_resnet18_by_its_old_name(old_resnet18_json(), "checkpoint"));
  EXPECT_FALSE(names_the_cifar_resnet18_by_its_old_name(run_of("resnet18").to_json(), "checkpoint"));
  EXPECT_FALSE(names_the_cifar_resnet18_by_its_old_name(run_of("resnet18-cifar").to_json(), "checkpoint"));
  std::string old_other = run_of("wrn").to_json();
  old_other.erase(old_other.find("\"zero_init_residual\":false,"), 27);
  EXPECT_FALSE(names_the_cifar_resnet18_by_its_old_name(old_other, "checkpoint"));
}

TEST(RenamedModel, AnOldResnet18CheckpointIsRefusedUnderTheNewMeaning) {
  const std::string message = refusal([] { check_resume(checkpoint_with(old_resnet18_json()), run_of("resnet18"), 1); });
  EXPECT_NE(message.find("meaning changed"), std::string::npos) << message;
  EXPECT_NE(message.find("give --model resnet18-cifar"), std::string::npos) << message;
  EXPECT_NE(message.find("run.h5.ckpt.h5"), std::string::npos) << message;
}

TEST(RenamedModel, AnOldResnet18CheckpointContinuesAsResnet18Cifar) {
  EXPECT_EQ(refusal([] { check_resume(checkpoint_with(old_resnet18_json()), run_of("resnet18-cifar"), 1); }), "");
  // The results file of the old run against a checkpoint the renamed run wrote, and the other way round.
  EXPECT_EQ(refusal([] {
              check_same_run_options(old_resnet18_json(), "the file has", run_of("resnet18-cifar").to_json(), "the checkpoint has");
            }),
            "");
}

TEST(RenamedModel, ANewResnet18CheckpointResumesAsResnet18Only) {
  const Checkpoint fresh = checkpoint_with(run_of("resnet18").to_json());
  EXPECT_EQ(refusal([&] { check_resume(fresh, run_of("resnet18"), 1); }), "");
  EXPECT_NE(refusal([&] { check_resume(fresh, run_of("resnet18-cifar"), 1); }).find("--model"), std::string::npos);
}

}  // namespace
}  // namespace sb
