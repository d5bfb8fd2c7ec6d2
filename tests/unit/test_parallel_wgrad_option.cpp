// --parallel-wgrad: on by default, on/off in every spelling a flag takes, recorded in the configuration
// JSON as parallel_wgrad, refused naming the option on a bad value, and free across a resume (the same
// gradients either way, so a resume may change it); a checkpoint written before it existed resumes as on.
#include <gtest/gtest.h>

#include <string>

#include "train/checkpoint/resume_check.h"
#include "train/train_config.h"
#include "train/train_options.h"
#include "user_error_text.h"

namespace sb {
namespace {

using testing::refusal;

const TrainOption& parallel_wgrad_row() {
  const TrainOption* found = train_option_named("parallel-wgrad");
  if (!found) throw std::runtime_error("no option --parallel-wgrad");
  return *found;
}

TEST(ParallelWgradOption, OnByDefaultAndRecorded) {
  const TrainConfig c;
  EXPECT_TRUE(c.parallel_wgrad);
  EXPECT_NE(c.to_json().find("\"parallel_wgrad\":true"), std::string::npos) << c.to_json();
  EXPECT_STREQ(parallel_wgrad_row().json_key, "parallel_wgrad");
}

TEST(ParallelWgradOption, ParsesOnAndOffAndReadsBack) {
  for (const char* off : {"off", "false", "0", "no"}) {
    TrainConfig c;
    parallel_wgrad_row().field.parse(c, off, "parallel-wgrad");
    EXPECT_FALSE(c.parallel_wgrad) << off;
    EXPECT_NE(c.to_json().find("\"parallel_wgrad\":false"), std::string::npos) << c.to_json();
    EXPECT_FALSE(TrainConfig::from_json(c.to_json(), "test").parallel_wgrad) << off;
    parallel_wgrad_row().field.parse(c, "on", "parallel-wgrad");
    EXPECT_TRUE(c.parallel_wgrad);
  }
}

TEST(ParallelWgradOption, ABadValueIsRefusedNamingTheOption) {
  TrainConfig c;
  const std::string message = refusal([&] { parallel_wgrad_row().field.parse(c, "sometimes", "parallel-wgrad"); });
  EXPECT_NE(message.find("--parallel-wgrad"), std::string::npos) << message;
  EXPECT_NE(message.find("'sometimes'"), std::string::npos) << message;
  EXPECT_NE(message.find("on or off"), std::string::npos) << message;
  EXPECT_TRUE(c.parallel_wgrad) << "a refused value leaves the setting";
}

TEST(ParallelWgradOption, AResumeMayChangeItAndOlderCheckpointsResumeWithItOn) {
  EXPECT_EQ(parallel_wgrad_row().resume, ResumeRule::Free);
  TrainConfig stored;
  stored.device = Device::Cuda;
  TrainConfig given = stored;
  given.parallel_wgrad = false;
  EXPECT_EQ(refusal([&] { check_same_run_options(stored.to_json(), "stored", given.to_json(), "given"); }), "");

  std::string older = stored.to_json();
  const std::string key = "\"parallel_wgrad\":true,";
  const size_t at = older.find(key);
  ASSERT_NE(at, std::string::npos) << older;
  older.erase(at, key.size());
  EXPECT_TRUE(TrainConfig::from_json(older, "an older checkpoint").parallel_wgrad);
}

}  // namespace
}  // namespace sb
