// --input, --workers and --pin-memory: their values and refusals, and the resume rule. They choose how
// batches reach the GPU, never which batches: the same bits either way, so a resume may change them,
// and a checkpoint written before they existed resumes as --input device.
#include <gtest/gtest.h>

#include <string>

#include "train/checkpoint/resume_check.h"
#include "train/config_json.h"
#include "train/train_config.h"
#include "train/train_options.h"
#include "user_error_text.h"

namespace sb {
namespace {

using testing::refusal;

const TrainOption& row(const char* name) {
  const TrainOption* found = train_option_named(name);
  if (!found) throw std::runtime_error(std::string("no option --") + name);
  return *found;
}

TEST(InputOptions, ValuesAndDefaults) {
  TrainConfig c;
  EXPECT_EQ(c.input, InputSource::Device);
  EXPECT_EQ(c.workers, 0) << "0: the cores the launcher gives each rank";
  EXPECT_TRUE(c.pin_memory);
  row("input").field.parse(c, "HOST", "input");
  row("workers").field.parse(c, "8", "workers");
  row("pin-memory").field.parse(c, "off", "pin-memory");
  EXPECT_EQ(c.input, InputSource::Host);
  EXPECT_EQ(c.workers, 8);
  EXPECT_FALSE(c.pin_memory);
  const TrainConfig back = TrainConfig::from_json(c.to_json(), "test");
  EXPECT_EQ(back.input, InputSource::Host);
  EXPECT_EQ(back.workers, 8);
  EXPECT_FALSE(back.pin_memory);
}

TEST(InputOptions, RefusalsNameTheOptionWithAHint) {
  TrainConfig c;
  EXPECT_EQ(refusal([&] { row("input").field.parse(c, "disk", "input"); }),
            "--input expects one of device, host (any case), got 'disk'");
  EXPECT_EQ(refusal([&] { row("workers").field.parse(c, "-1", "workers"); }),
            "--workers must lie in [0, 1024] (got -1); 0 takes the cores the launcher gives each rank");
  EXPECT_EQ(refusal([&] { row("workers").field.parse(c, "4096", "workers"); }),
            "--workers must lie in [0, 1024] (got 4096); 0 takes the cores the launcher gives each rank");
  c.workers = 2000;  // from a configuration built in code: refused by validate() alike
  EXPECT_NE(refusal([&] { c.validate(); }).find("--workers must lie in [0, 1024] (got 2000)"), std::string::npos);
}

TEST(InputOptions, AResumeMayChangeHowBatchesReachTheGpu) {
  for (const char* name : {"input", "workers", "pin-memory"}) EXPECT_EQ(row(name).resume, ResumeRule::Free) << name;
  TrainConfig stored;
  stored.device = Device::Cuda;
  TrainConfig given = stored;
  given.input = InputSource::Host;
  given.workers = 3;
  given.pin_memory = false;
  EXPECT_EQ(refusal([&] { check_same_run_options(stored.to_json(), "stored", given.to_json(), "given"); }), "");
}

TEST(InputOptions, ACheckpointFromBeforeTheseOptionsResumesAsDeviceInput) {
  TrainConfig c;
  std::string json = c.to_json();
  for (const char* key : {"\"input\":\"device\",", "\"workers\":0,", "\"pin_memory\":true,"}) {
    const size_t at = json.find(key);
    ASSERT_NE(at, std::string::npos) << key << " in " << json;
    json.erase(at, std::string(key).size());
  }
  const TrainConfig back = TrainConfig::from_json(json, "an older checkpoint");
  EXPECT_EQ(back.input, InputSource::Device);
  EXPECT_EQ(back.workers, 0);
  EXPECT_TRUE(back.pin_memory);
  TrainConfig given = c;
  given.input = InputSource::Host;
  EXPECT_EQ(refusal([&] { check_same_run_options(json, "stored", given.to_json(), "given"); }), "");
}

}  // namespace
}  // namespace sb
