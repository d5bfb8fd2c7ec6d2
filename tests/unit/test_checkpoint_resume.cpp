// What a --resume checks before it touches anything: the table of options a resume may change, the
// epochs, the rank count, the data's identity, and the results file it continues.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "metrics/results_file.h"
#include "train/checkpoint/data_identity.h"
#include "train/checkpoint/resume_check.h"
#include "train/train_config.h"
#include "user_error_text.h"

namespace sb {
namespace {

namespace fs = std::filesystem;

using testing::refusal;

void expect_refused(const std::string& message, std::vector<std::string> parts) {
  EXPECT_FALSE(message.empty()) << "expected a refusal naming " << parts.front();
  for (const std::string& part : parts) EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' in: " << message;
}

TrainConfig base_config() {
  TrainConfig c;
  c.model = "mnist-cnn";
  c.data = "synthetic:1x28x28:10:1024:256";
  c.optimizer = OptimizerKind::Adadelta;
  c.lr = 1.0;
  c.epochs = 3;
  c.out = "run.h5";
  return c;
}

// A checkpoint of base_config()'s run, taken at `epoch` (next to run), `step` (next within it).
Checkpoint checkpoint_at(int epoch, int64_t step, int ranks = 2) {
  Checkpoint c;
  c.config_json = base_config().to_json();
  c.world_size = ranks;
  c.loop.epoch = epoch;
  c.loop.step_in_epoch = step;
  return c;
}

TEST(ResumeOptions, FlatJsonMembersOfAConfiguration) {
  const auto members = flat_json_members(base_config().to_json(), "test");
  ASSERT_FALSE(members.empty());
  EXPECT_EQ(members.front(), (std::pair<std::string, std::string>{"model", "\"mnist-cnn\""}));
  EXPECT_EQ(flat_json_members(R"( {"a" : "x\"}y", "b":-1.5e3 ,"c":true} )", "test"),
            (std::vector<std::pair<std::string, std::string>>{{"a", R"("x\"}y")"}, {"b", "-1.5e3"}, {"c", "true"}}));
  EXPECT_TRUE(flat_json_members("{}", "test").empty());
  for (const char* bad : {"", "[]", "{\"a\":{}}", "{\"a\":[1]}", "{\"a\":1", "{\"a\" 1}", "{\"a\":1}x", "{\"a\":}", "{\"a"})
    expect_refused(refusal([&] { flat_json_members(bad, "checkpoint x.h5"); }), {"checkpoint x.h5"});
}

TEST(ResumeOptions, TheTableNamesWhatMayChangeAndEveryOtherKeyMustMatch) {
  const std::string stored = base_config().to_json();
  // Output, logging, tracing and checkpointing may change; so may --epochs here (check_resume bounds it).
  TrainConfig changed = base_config();
  changed.out = "/elsewhere/moved.h5";
  changed.log_interval = 5;
  changed.sample_steps = 3;
  changed.checkpoint_every = 2;
  changed.epochs = 9;
  changed.trace = "traces";
  changed.checkpoint = "other.ckpt.h5";
  EXPECT_EQ(refusal([&] { check_same_run_options(stored, "the checkpoint has", changed.to_json(), "this command gives"); }), "");
  for (const TrainOption& row : train_options()) {
    if (row.json_key) { EXPECT_EQ(option_for_key(row.json_key), std::string("--") + row.name); }
  }

  TrainConfig lr = base_config();
  lr.lr = 0.5;
  expect_refused(refusal([&] { check_same_run_options(stored, "the checkpoint has", lr.to_json(), "this command gives"); }),
                 {"--lr: the checkpoint has 1, this command gives 0.5", "--epochs"});
  TrainConfig seed = base_config();
  seed.seed = 99;
  expect_refused(refusal([&] { check_same_run_options(stored, "stored", seed.to_json(), "given"); }), {"--seed: stored 1, given 99"});
  TrainConfig warmup = base_config();
  warmup.warmup_epochs = 2;
  expect_refused(refusal([&] { check_same_run_options(stored, "stored", warmup.to_json(), "given"); }), {"--lr-warmup-epochs"});
  TrainConfig model = base_config();
  model.model = "mlp";
  expect_refused(refusal([&] { check_same_run_options(stored, "stored", model.to_json(), "given"); }),
                 {"--model: stored \"mnist-cnn\", given \"mlp\""});
  // A key only one side has is a difference too (a checkpoint of another version).
  expect_refused(refusal([&] { check_same_run_options(R"({"model":"mnist-cnn"})", "stored", R"({"model":"mnist-cnn","x_y":1})", "given"); }),
                 {"--x-y: stored (not recorded), given 1"});
}

// A configuration recorded before the target's --patience existed stored the improvement rule as
// "patience": it reads, and resumes, as --stop-after-no-improvement.
TEST(ResumeOptions, AnOldStoredPatienceKeepsItsMeaning) {
  std::string old = base_config().to_json();
  for (const char* key : {"\"target_patience\":0,", "\"stop_after_no_improvement\":0,"}) {
    const size_t at = old.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    old.erase(at, std::string(key).size());
  }
  const size_t target_at = old.find("\"target_accuracy\"");
  ASSERT_NE(target_at, std::string::npos);
  old.insert(target_at, "\"patience\":3,");
  const TrainConfig read = TrainConfig::from_json(old, "checkpoint old.h5");
  EXPECT_EQ(read.stop_after_no_improvement, 3);
  EXPECT_EQ(read.patience, 0);
  EXPECT_NO_THROW(read.validate());

  TrainConfig same = base_config();
  same.stop_after_no_improvement = 3;
  EXPECT_EQ(refusal([&] { check_same_run_options(old, "the checkpoint has", same.to_json(), "this command gives"); }), "");
  TrainConfig other = base_config();
  other.stop_after_no_improvement = 2;
  expect_refused(refusal([&] { check_same_run_options(old, "the checkpoint has", other.to_json(), "this command gives"); }),
                 {"--stop-after-no-improvement: the checkpoint has 3, this command gives 2"});
  // The target's patience did not exist then: the old run stopped at the first evaluation reaching the target.
  TrainConfig target = same;
  target.patience = 2;
  expect_refused(refusal([&] { check_same_run_options(old, "the checkpoint has", target.to_json(), "this command gives"); }),
                 {"--patience: the checkpoint has 0, this command gives 2"});
}

// Configurations recorded before the renames stored --lr-warmup-epochs as "warmup_epochs" and
// --untimed-init as "warm_up": they read, and resume, under today's names.
TEST(ResumeOptions, OlderKeysOfRenamedOptionsKeepTheirMeaning) {
  std::string old = base_config().to_json();
  for (const auto& [now, before] : {std::pair{"\"lr_warmup_epochs\":", "\"warmup_epochs\":"},
                                    std::pair{"\"untimed_init\":", "\"warm_up\":"}}) {
    const size_t at = old.find(now);
    ASSERT_NE(at, std::string::npos) << now;
    old.replace(at, std::string(now).size(), before);
  }
  const size_t lr_at = old.find("\"warmup_epochs\":0");
  ASSERT_NE(lr_at, std::string::npos) << old;
  old.replace(lr_at, std::string("\"warmup_epochs\":0").size(), "\"warmup_epochs\":2");
  const size_t init_at = old.find("\"warm_up\":false");
  ASSERT_NE(init_at, std::string::npos) << old;
  old.replace(init_at, std::string("\"warm_up\":false").size(), "\"warm_up\":true");
  const TrainConfig read = TrainConfig::from_json(old, "checkpoint old.h5");
  EXPECT_EQ(read.warmup_epochs, 2);
  ASSERT_TRUE(read.untimed_init.has_value());
  EXPECT_TRUE(*read.untimed_init);

  TrainConfig same = base_config();
  same.warmup_epochs = 2;
  EXPECT_EQ(refusal([&] { check_same_run_options(old, "the checkpoint has", same.to_json(), "this command gives"); }), "");
  expect_refused(refusal([&] { check_same_run_options(old, "the checkpoint has", base_config().to_json(), "this command gives"); }),
                 {"--lr-warmup-epochs: the checkpoint has 2, this command gives 0"});
}

// What the early-stopping rules remember travels with the checkpoint, so a resume continues a streak of
// evaluations at the target and keeps the time it was first reached.
TEST(ResumeChecks, TheCheckpointKeepsTheStoppingState) {
  const fs::path dir = fs::temp_directory_path() / ("sb-stop-state-" + std::to_string(getpid()));
  fs::create_directories(dir);
  Checkpoint c = checkpoint_at(2, 0, 1);
  c.data = DataIdentity{"synthetic:1x28x28:10:1024:256", 1024, 256, 7};
  c.engine.params = {0.5f, -1.0f};
  c.rank_buffers = {{}};
  c.rank_totals = {EvalTotals{}};
  for (const double reached : {std::nan(""), 3.25}) {
    c.loop.stop = StopState{0.75, 1, 2};
    c.loop.target_reached_s = reached;
    const std::string path = (dir / "stop.ckpt.h5").string();
    write_checkpoint(c, path);
    const Checkpoint read = read_checkpoint(path);
    EXPECT_EQ(read.loop.stop.best_accuracy, 0.75);
    EXPECT_EQ(read.loop.stop.evaluations_without_improvement, 1);
    EXPECT_EQ(read.loop.stop.evaluations_at_target, 2);
    if (std::isnan(reached))
      EXPECT_TRUE(std::isnan(read.loop.target_reached_s));
    else
      EXPECT_EQ(read.loop.target_reached_s, reached);
  }
  fs::remove_all(dir);
}

TEST(ResumeOptions, DataAreComparedInCanonicalForm) {
  TrainConfig a = base_config(), b = base_config();
  a.data = "synthetic";
  b.data = "synthetic:3x32x32:100:50000:10000";
  EXPECT_EQ(refusal([&] { check_same_run_options(a.to_json(), "stored", b.to_json(), "given"); }), "");
  b.data = "synthetic:3x32x32:100:2000:10000";
  expect_refused(refusal([&] { check_same_run_options(a.to_json(), "stored", b.to_json(), "given"); }),
                 {"--data: stored \"synthetic\", given \"synthetic:3x32x32:100:2000:10000\""});
}

TEST(ResumeChecks, EpochsRanksAndAFinishedRun) {
  TrainConfig config = base_config();
  config.resume = "run.h5.ckpt.h5";
  EXPECT_EQ(refusal([&] { check_resume(checkpoint_at(2, 5), config, 2); }), "");
  EXPECT_FALSE(resume_is_finished(checkpoint_at(2, 5), config));
  EXPECT_EQ(epochs_begun(checkpoint_at(2, 5)), 3);
  EXPECT_EQ(epochs_begun(checkpoint_at(2, 0)), 2);

  config.epochs = 2;  // fewer than the three the checkpoint has begun
  expect_refused(refusal([&] { check_resume(checkpoint_at(2, 5), config, 2); }),
                 {"--epochs 2 is fewer than the 3 epochs", "run.h5.ckpt.h5", "--epochs 3 or more"});
  EXPECT_EQ(refusal([&] { check_resume(checkpoint_at(2, 0), config, 2); }), "");
  EXPECT_TRUE(resume_is_finished(checkpoint_at(2, 0), config));
  config.epochs = 4;  // more epochs continue a finished run
  EXPECT_FALSE(resume_is_finished(checkpoint_at(3, 0), config));

  // Another rank count: at an epoch boundary only.
  EXPECT_EQ(refusal([&] { check_resume(checkpoint_at(2, 0), config, 4); }), "");
  expect_refused(refusal([&] { check_resume(checkpoint_at(2, 5), config, 4); }), {"written by 2 ranks", "epoch 3"});
}

TEST(ResumeChecks, DataIdentityNamesTheField) {
  TrainTest data;
  data.train.labels = {1, 2, 3, 4};
  data.test.labels = {0, 1};
  const DataIdentity stored = data_identity("synthetic", data);
  EXPECT_EQ(stored.spec, "synthetic:3x32x32:100:50000:10000");
  EXPECT_EQ(stored.train_samples, 4);
  EXPECT_EQ(stored.test_samples, 2);
  EXPECT_EQ(refusal([&] { check_same_data(stored, data_identity("synthetic:3x32x32:100", data), "c.h5"); }), "");

  TrainTest fewer = data;
  fewer.train.labels.pop_back();
  expect_refused(refusal([&] { check_same_data(stored, data_identity("synthetic", fewer), "c.h5"); }),
                 {"c.h5", "training sample count was 4", "is 3"});
  TrainTest relabelled = data;
  relabelled.test.labels = {1, 0};
  expect_refused(refusal([&] { check_same_data(stored, data_identity("synthetic", relabelled), "c.h5"); }), {"label checksum"});
  expect_refused(refusal([&] { check_same_data(stored, data_identity("synthetic:1x8x8:4", data), "c.h5"); }),
                 {"--data", "'synthetic:3x32x32:100:50000:10000'", "'synthetic:1x8x8:4:50000:10000'"});
}

class ResultsContinuation : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sb_resume_unit_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // A train file of `ranks` ranks holding `epochs` epochs of `config`.
  std::string train_file(const std::string& name, int epochs, int ranks = 2, const TrainConfig& config = base_config()) {
    RunMetadata m;
    m.config_json = config.to_json();
    m.world_size = ranks;
    m.hosts.assign(static_cast<size_t>(ranks), "node");
    m.gpu_models.assign(static_cast<size_t>(ranks), "cpu");
    ResultsFile file(path(name), m);
    for (int e = 1; e <= epochs; ++e) {
      EpochRow row;
      row.epoch = e;
      file.main_run().append_epoch(row, std::vector<double>(static_cast<size_t>(ranks), 1.0));
    }
    file.close(false);
    return path(name);
  }
  fs::path dir_;
};

TEST_F(ResultsContinuation, TheRunsOwnFileWithTheCheckpointsEpochsIsAccepted) {
  EXPECT_EQ(refusal([&] { check_results_continuation(train_file("run.h5", 2), checkpoint_at(2, 5), "c.h5", 2); }), "");
}

TEST_F(ResultsContinuation, MissingOrAnotherEpochCountIsRefusedWithBothCounts) {
  expect_refused(refusal([&] { check_results_continuation(path("gone.h5"), checkpoint_at(2, 5), "c.h5", 2); }),
                 {"gone.h5", "0 epochs", "c.h5 has finished 2 epochs"});
  expect_refused(refusal([&] { check_results_continuation(train_file("ahead.h5", 3), checkpoint_at(2, 5), "c.h5", 2); }),
                 {"ahead.h5 holds 3 epochs", "has finished 2 epochs", "ahead of the checkpoint"});
  expect_refused(refusal([&] { check_results_continuation(train_file("behind.h5", 1), checkpoint_at(2, 0), "c.h5", 2); }),
                 {"holds 1 epoch ", "finished 2 epochs"});
}

TEST_F(ResultsContinuation, AnotherRunsOrAnotherKindOfFileIsRefused) {
  TrainConfig other = base_config();
  other.lr = 0.25;
  expect_refused(refusal([&] { check_results_continuation(train_file("other.h5", 2, 2, other), checkpoint_at(2, 5), "c.h5", 2); }),
                 {"--lr", "other.h5", "0.25", "c.h5 with 1"});
  expect_refused(refusal([&] { check_results_continuation(train_file("four.h5", 2, 4), checkpoint_at(2, 0), "c.h5", 2); }),
                 {"4 ranks", "on 2 ranks"});
  RunMetadata m;
  m.hosts = {"node"};
  m.gpu_models = {"cpu"};
  {
    ResultsFile study(path("study.h5"), m);
    study.begin_study(StudyInfo{"weak", 1});
    study.close();
  }
  expect_refused(refusal([&] { check_results_continuation(path("study.h5"), checkpoint_at(0, 5), "c.h5", 1); }),
                 {"study.h5", "not the file of a `scalebench train` run"});
}

}  // namespace
}  // namespace sb
