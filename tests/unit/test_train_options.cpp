// The option rows of a training run (train/train_options.h): each row's --help default parses back to
// the same configuration, the configuration JSON (results files, checkpoints) reads back to the same
// configuration, every refusal names its option, and the named choices are one table each.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/registry.h"
#include "train/config_json.h"
#include "train/checkpoint/resume_check.h"
#include "train/train_config.h"
#include "train/train_options.h"
#include "user_error_text.h"

namespace sb {
namespace {

using testing::refusal;

// --help's note for an unset value ("none", "default: 0, adamw: 0.01"), not a value to parse.
bool is_note(const TrainOption& row, const std::string& shown) {
  return (shown == "none" && row.field.choices.empty()) || shown.rfind("default: ", 0) == 0;
}

TEST(TrainOptions, EveryHelpDefaultParsesBackToTheDefault) {
  const TrainConfig defaults;
  std::set<std::string> noted;
  for (const TrainOption& row : train_options()) {
    SCOPED_TRACE(row.name);
    const std::string shown = row.field.show(defaults);
    if (is_note(row, shown)) {  // an unset value: --help describes it instead of showing one
      noted.insert(row.name);
      continue;
    }
    TrainConfig parsed;
    row.field.parse(parsed, shown, row.name);
    EXPECT_EQ(row.field.show(parsed), shown);
    EXPECT_EQ(parsed.to_json(), defaults.to_json());
  }
  EXPECT_EQ(noted, (std::set<std::string>{"weight-decay", "eps", "plan-cache", "image-size", "val-resize", "untimed-init", "fold-bn-statistics", "out",
                                          "trace", "checkpoint", "resume", "csv", "json", "mllog"}));
}

// A value other than the default for every option, as the command line gives it.
const std::map<std::string, std::string> kOtherValues = {
    {"model", "wrn"},           {"data", "synthetic:3x8x8:4:\"q\\uote"},
    {"epochs", "7"},            {"batch-size", "96"},
    {"scaling", "STRONG"},      {"accumulate-steps", "4"},
    {"eval-batch-size", "123"},
    {"train-limit", "500"},     {"test-limit", "60"},
    {"drop-last", "on"},        {"augment", "yes"},
    {"dropout", "off"},         {"zero-init-residual", "on"}, {"optimizer", "AdamW"},
    {"lr", "0.125"},            {"momentum", "0.5"},
    {"dampening", "0.25"},      {"nesterov", "true"},
    {"weight-decay", "0.0625"}, {"rho", "0.75"},
    {"eps", "1e-07"},           {"beta1", "0.8"},
    {"beta2", "0.99"},          {"scheduler", "cosine"},
    {"step-size", "3"},         {"gamma", "0.5"},
    {"lr-warmup-epochs", "1.5"}, {"min-lr", "0.001"},
    {"scale-lr", "on"},         {"seed", "9007199254740993"},
    {"device", "cuda"},         {"precision", "bf16"},
    {"layout", "nchw"},         {"cuda-graph", "off"},
    {"bucket-mib", "12.5"},     {"allreduce-bf16", "on"},
    {"parallel", "DP"},         {"replicas", "3"},
    {"deterministic", "on"},    {"autotune", "no"},         {"fold-batch-norm", "on"},
    {"fold-bn-statistics", "on"},
    {"plan-cache", "plans"},    {"input", "Host"},
    {"workers", "3"},           {"pin-memory", "off"},      {"decode", "GPU"},
    {"image-size", "160"},      {"val-resize", "192"},      {"bad-images", "skip"},     {"untimed-init", "on"},
    {"target-accuracy", "0.875"},
    {"patience", "4"},          {"stop-after-no-improvement", "5"}, {"log-interval", "10"},
    {"sample-steps", "8"},      {"collective-timeout", "30"},
    {"out", "runs/a b.h5"},     {"trace", "traces"},
    {"checkpoint-every", "2"},  {"checkpoint", "c.h5"},
    {"resume", "r.h5"},
    {"log-seconds", "2.5"},     {"csv", "t.csv"},          {"json", "t.jsonl"},  {"mllog", "m.log"},
};

TrainConfig other_config() {
  TrainConfig c;
  for (const TrainOption& row : train_options()) {
    const auto value = kOtherValues.find(row.name);
    if (value == kOtherValues.end()) {
      ADD_FAILURE() << "no other value for --" << row.name << " in this test";
      continue;
    }
    row.field.parse(c, value->second, row.name);
  }
  return c;
}

TEST(TrainOptions, TheStoredConfigurationReadsBackToTheSameConfiguration) {
  const TrainConfig defaults, other = other_config();
  const auto default_members = flat_json_members(defaults.to_json(), "defaults");
  const auto other_members = flat_json_members(other.to_json(), "other");
  ASSERT_EQ(other_members.size(), default_members.size());
  for (size_t i = 0; i < other_members.size(); ++i)  // the test changes every recorded option
    EXPECT_NE(other_members[i].second, default_members[i].second) << other_members[i].first;

  const TrainConfig back = TrainConfig::from_json(other.to_json(), "test");
  EXPECT_EQ(back.to_json(), other.to_json());
  for (const TrainOption& row : train_options()) {
    if (!row.json_key) continue;
    EXPECT_EQ(row.field.show(back), row.field.show(other)) << row.name;
  }
  EXPECT_EQ(back.optimizer, OptimizerKind::AdamW);
  EXPECT_EQ(back.device, Device::Cuda);
  EXPECT_EQ(back.precision, Precision::BF16);
  EXPECT_EQ(back.layout, Layout::NCHW);
  EXPECT_EQ(back.scheduler, ScheduleKind::Cosine);
  EXPECT_EQ(back.scaling, Scaling::Strong);
  EXPECT_EQ(back.seed, 9007199254740993ull);  // beyond a double's 53 bits: integers stay integers
  EXPECT_EQ(back.data, "synthetic:3x8x8:4:\"q\\uote");
}

// Results files and checkpoints written before keep reading: the keys, their order and their spelling.
TEST(TrainOptions, TheConfigurationJsonKeepsItsKeys) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : flat_json_members(TrainConfig{}.to_json(), "defaults")) keys.push_back(key);
  const std::vector<std::string> want = {
      "model",        "data",          "epochs",     "batch_size",      "scaling",  "accumulate_steps", "eval_batch_size", "train_limit",
      "test_limit",   "drop_last",     "augment",    "dropout",         "zero_init_residual", "optimizer", "lr", "momentum",
      "dampening",    "nesterov",      "weight_decay", "rho",           "eps",      "beta1",           "beta2",
      "scheduler",    "step_size",     "gamma",      "lr_warmup_epochs", "min_lr",   "scale_lr",        "seed",
      "device",       "precision",     "layout",     "cuda_graph",      "bucket_mib", "allreduce_bf16", "parallel",
      "replicas",     "deterministic",
      "autotune", "fold_batch_norm", "fold_bn_statistics", "input", "workers", "pin_memory", "decode", "image_size", "val_resize", "bad_images", "untimed_init", "target_accuracy", "target_patience",
      "stop_after_no_improvement", "log_interval", "log_seconds", "sample_steps",  "collective_timeout", "out", "checkpoint_every"};
  EXPECT_EQ(keys, want);
  EXPECT_NE(TrainConfig{}.to_json().find("\"optimizer\":\"sgd\",\"lr\":0.01,"), std::string::npos) << TrainConfig{}.to_json();
}

// --untimed-init follows the device unless given (on for CUDA, off for the CPU, where it buys nothing),
// and the configuration records what the run took.
TEST(TrainOptions, TheUntimedInitDefaultFollowsTheDevice) {
  TrainConfig cpu, cuda;
  cpu.device = Device::Cpu;
  cuda.device = Device::Cuda;
  EXPECT_FALSE(cpu.untimed_init_on());
  EXPECT_TRUE(cuda.untimed_init_on());
  EXPECT_NE(cpu.to_json().find("\"untimed_init\":false"), std::string::npos);
  EXPECT_NE(cuda.to_json().find("\"untimed_init\":true"), std::string::npos);
  const TrainOption& row = *train_option_named("untimed-init");
  row.field.parse(cpu, "on", row.name);
  row.field.parse(cuda, "off", row.name);
  EXPECT_TRUE(cpu.untimed_init_on());
  EXPECT_FALSE(cuda.untimed_init_on());
  EXPECT_EQ(row.field.show(TrainConfig{}), "default: on for cuda, off for cpu");
}

// --fold-bn-statistics, unless given, follows the model's row in fp16 and NHWC, where the fold was measured
// faster, and is off everywhere else; a given value wins either way, and the configuration records what the
// run took. It is worked out from the final precision, so each point of a --sweep-precision study gets its own.
TEST(TrainOptions, TheBatchNormStatisticsFoldFollowsTheModelInFp16Nhwc) {
  const auto folds = [](const std::string& model, Precision precision, Layout layout) {
    TrainConfig c;
    c.model = model;
    c.precision = precision;
    c.layout = layout;
    return c.fold_bn_statistics_on();
  };
  for (const ModelInfo& m : model_catalog()) {
    EXPECT_EQ(folds(m.name, Precision::FP16, Layout::NHWC), m.fp16_folds_bn_statistics) << m.name;
    for (Precision other : {Precision::FP32, Precision::TF32, Precision::BF16})
      EXPECT_FALSE(folds(m.name, other, Layout::NHWC)) << m.name << ": the fold pays in fp16 only";
    EXPECT_FALSE(folds(m.name, Precision::FP16, Layout::NCHW)) << m.name << ": the graph runs on NHWC only";
  }
  EXPECT_TRUE(folds("resnet50", Precision::FP16, Layout::NHWC));
  EXPECT_FALSE(folds("wrn", Precision::FP16, Layout::NHWC)) << "slower for the wrn (docs/decisions.md)";

  TrainConfig c;
  c.model = "resnet50";
  c.precision = Precision::FP16;
  EXPECT_NE(c.to_json().find("\"fold_bn_statistics\":true"), std::string::npos) << "recorded resolved";
  const TrainOption& row = *train_option_named("fold-bn-statistics");
  EXPECT_EQ(row.field.show(c), "default: on for those models in fp16 and nhwc");
  row.field.parse(c, "off", row.name);
  EXPECT_FALSE(c.fold_bn_statistics_on()) << "--no-fold-bn-statistics wins";
  c.model = "wrn";
  c.precision = Precision::BF16;
  row.field.parse(c, "on", row.name);
  EXPECT_TRUE(c.fold_bn_statistics_on()) << "a given --fold-bn-statistics wins";
  EXPECT_NE(c.to_json().find("\"fold_bn_statistics\":true"), std::string::npos);
}

TEST(TrainOptions, AStoredConfigurationOfAnotherShapeIsRefusedNamingTheKey) {
  const std::string what = "checkpoint x.h5";
  std::string message = refusal([&] { TrainConfig::from_json(R"({"lr":0.1,"learning_rate":2})", what); });
  EXPECT_NE(message.find(what), std::string::npos) << message;
  EXPECT_NE(message.find("learning_rate"), std::string::npos) << message;
  message = refusal([&] { TrainConfig::from_json(R"({"device":"tpu"})", what); });
  EXPECT_NE(message.find("--device"), std::string::npos) << message;
  message = refusal([&] { TrainConfig::from_json(R"({"epochs":1.5})", what); });
  EXPECT_NE(message.find("--epochs"), std::string::npos) << message;
  message = refusal([&] { TrainConfig::from_json(R"({"augment":"yes"})", what); });
  EXPECT_NE(message.find("--augment"), std::string::npos) << message;
}

// Results files and checkpoints of a scalebench that still had the CUDA paths' A/B switches read as
// today's run (each switch is now its settled default), also for a resume.
TEST(TrainOptions, TheRetiredSwitchesOfAStoredConfigurationAreSkipped) {
  std::string json = TrainConfig{}.to_json();
  const std::string key = "\"autotune\":true,";
  const size_t at = json.find(key);
  ASSERT_NE(at, std::string::npos) << json;
  json.insert(at, "\"batchnorm_path\":\"legacy\",\"fused_bn\":false,\"fused_residual_grad\":false,\"parallel_wgrad\":false,"
                  "\"optimizer_overlap\":false,\"symmetric_memory\":false,");
  EXPECT_EQ(TrainConfig::from_json(json, "an older checkpoint").to_json(), TrainConfig{}.to_json());
  EXPECT_EQ(refusal([&] { check_same_run_options(json, "an older checkpoint", TrainConfig{}.to_json(), "this run"); }), "");
  for (const char* retired : {"batchnorm_path", "fused_bn", "fused_residual_grad", "parallel_wgrad", "optimizer_overlap",
                              "symmetric_memory"}) {
    EXPECT_TRUE(is_retired_json_key(retired)) << retired;
    EXPECT_EQ(train_option_for_key(retired), nullptr) << retired;
  }
  EXPECT_FALSE(is_retired_json_key("autotune"));
}

// A value just outside the bounds: the bound itself where it is open, one beyond it where it is closed.
std::vector<double> outside(const Bounds& b) {
  std::vector<double> values;
  if (std::isfinite(b.lowest)) values.push_back(b.lowest_open ? b.lowest : b.lowest - 1);
  if (std::isfinite(b.highest)) values.push_back(b.highest_open ? b.highest : b.highest + 1);
  return values;
}

std::string text_of(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

TEST(TrainOptions, EveryRefusalNamesTheOptionOnTheCommandLineAndInValidate) {
  int bounded = 0;
  for (const TrainOption& row : train_options()) {
    SCOPED_TRACE(row.name);
    const std::string option = std::string("--") + row.name;
    if (row.field.bounds) {
      for (double v : outside(*row.field.bounds)) {
        ++bounded;
        TrainConfig c;
        const std::string parsed = refusal([&] { row.field.parse(c, text_of(v), row.name); });
        EXPECT_EQ(parsed.rfind(option + " must", 0), 0u) << parsed;
        EXPECT_NE(parsed.find("(got " + text_of(v) + ")"), std::string::npos) << parsed;
        // The same value from a stored configuration (no parse on the way) is refused by validate().
        const std::string json = std::string("{\"") + row.json_key + "\":" + text_of(v) + "}";
        TrainConfig stored;
        const std::string read = refusal([&] { stored = TrainConfig::from_json(json, "test"); });
        if (read.empty()) EXPECT_EQ(refusal([&] { stored.validate(); }), parsed);
        else EXPECT_NE(read.find(option), std::string::npos) << read;  // a value its field can't hold
      }
    }
    if (row.value_name[0] == '\0' || !row.field.choices.empty() || row.field.bounds) {
      TrainConfig c;
      const std::string message = refusal([&] { row.field.parse(c, "nonsense", row.name); });
      EXPECT_EQ(message.rfind(option + " expects ", 0), 0u) << message;
      EXPECT_NE(message.find("'nonsense'"), std::string::npos) << message;
      for (const std::string& name : row.field.choices) EXPECT_NE(message.find(name), std::string::npos) << message;
    }
  }
  EXPECT_GT(bounded, 20);
  EXPECT_EQ(refusal([] { TrainConfig{}.validate(); }), "");
}

TEST(TrainOptions, IntegersAreNeverWrappedIntoTheirField) {
  const TrainOption& epochs = *train_option_named("epochs");
  TrainConfig c;
  EXPECT_NE(refusal([&] { epochs.field.parse(c, "4294967297", "epochs"); }).find("no larger than 2147483647"), std::string::npos);
  EXPECT_NE(refusal([&] { epochs.field.parse(c, "3.5", "epochs"); }).find("an integer"), std::string::npos);
  EXPECT_NE(refusal([&] { train_option_named("seed")->field.parse(c, "-1", "seed"); }).find("--seed must not be negative"),
            std::string::npos);
  EXPECT_EQ(c.epochs, TrainConfig{}.epochs);
  EXPECT_EQ(c.seed, TrainConfig{}.seed);
}

TEST(TrainOptions, RulesBetweenOptionsNameBoth) {
  TrainConfig c;
  c.precision = Precision::BF16;
  const std::string message = refusal([&] { c.validate(); });
  EXPECT_NE(message.find("--precision bf16"), std::string::npos) << message;
  EXPECT_NE(message.find("--device cuda"), std::string::npos) << message;
  c.device = Device::Cuda;
  EXPECT_EQ(refusal([&] { c.validate(); }), "");
}

TEST(TrainOptions, RowsHaveOneNameOneKeyAndAResumeRule) {
  std::set<std::string> names, keys;
  for (const TrainOption& row : train_options()) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_EQ(train_option_named(row.name), &row);
    EXPECT_FALSE(row.help.empty()) << row.name;
    if (!row.json_key) continue;
    EXPECT_TRUE(keys.insert(row.json_key).second) << row.json_key;
    EXPECT_EQ(train_option_for_key(row.json_key), &row);
  }
  EXPECT_EQ(train_option_named("epochs")->resume, ResumeRule::NotFewer);
  EXPECT_EQ(train_option_named("data")->resume, ResumeRule::SameData);
  EXPECT_EQ(train_option_named("lr")->resume, ResumeRule::Same);
  EXPECT_EQ(train_option_named("out")->resume, ResumeRule::Free);
}

template <class E>
void expect_names_round_trip() {
  std::set<std::string> seen;
  for (const EnumName<E>& row : enum_names(E{})) {
    EXPECT_TRUE(seen.insert(row.name).second) << row.name;
    EXPECT_STREQ(name_of(row.value), row.name);
    EXPECT_EQ(find_by_name<E>(row.name), row.value);
  }
  EXPECT_EQ(find_by_name<E>("nonsense"), std::nullopt);
}

TEST(TrainOptions, EachChoiceHasOneTableOfNames) {
  expect_names_round_trip<Device>();
  expect_names_round_trip<Precision>();
  expect_names_round_trip<Layout>();
  expect_names_round_trip<Scaling>();
  expect_names_round_trip<OptimizerKind>();
  expect_names_round_trip<ScheduleKind>();
  EXPECT_EQ(find_by_name<Precision>("BF16"), Precision::BF16);
  EXPECT_EQ(compute_dtype(Precision::TF32), DType::F32);
  EXPECT_EQ(compute_dtype(Precision::FP16), DType::F16);
  EXPECT_EQ(compute_dtype(Precision::BF16), DType::BF16);
}

}  // namespace
}  // namespace sb
