// TrainConfig's members that go through the option rows (train/train_options.h): validate(), to_json()
// and from_json(). They live beside the rows rather than in train_config.cpp, so that the rows build on
// the configuration and the configuration knows nothing of them.
#include "core/error.h"
#include "core/json_text.h"
#include "train/config_json.h"
#include "train/run_setup.h"
#include "train/train_config.h"
#include "train/train_options.h"

namespace sb {

namespace {

// The rules that join two options; each option's own bounds are in its row (train/train_options.cpp).
struct CrossRule {
  bool (*holds)(const TrainConfig&);
  std::string (*refusal)(const TrainConfig&);
};
constexpr CrossRule kCrossRules[] = {
    {[](const TrainConfig& c) { return c.parallel == Parallel::Dp || c.replicas == 1; },
     [](const TrainConfig& c) {
       return "--replicas " + std::to_string(c.replicas) + " needs --parallel dp; --parallel ddp runs one replica per "
              "rank (launch " + std::to_string(c.replicas) + " ranks instead)";
     }},
    {[](const TrainConfig& c) { return c.parallel != Parallel::Dp || c.device != Device::Cuda || c.input == InputSource::Device; },
     [](const TrainConfig&) {
       return std::string("--input host is not available with --parallel dp: DataParallel's replica 0 builds each batch "
                          "on its GPU and scatters it; use --input device, or --parallel ddp for the host pipeline");
     }},
    {[](const TrainConfig& c) { return c.input == InputSource::Device || c.accumulate_steps == 1 || c.device != Device::Cuda; },
     [](const TrainConfig& c) {
       return "--input host uploads one batch per optimizer step and cannot feed --accumulate-steps " +
              std::to_string(c.accumulate_steps) + "; use --input device, or a larger --batch-size without accumulation";
     }},
    {[](const TrainConfig& c) { return c.parallel != Parallel::Dp || c.accumulate_steps == 1; },
     [](const TrainConfig& c) {
       return "--parallel dp takes one micro-batch per step; --accumulate-steps " + std::to_string(c.accumulate_steps) +
              " needs --parallel ddp";
     }},
    {[](const TrainConfig& c) { return c.device == Device::Cuda || c.precision == Precision::FP32; },
     [](const TrainConfig& c) {
       return "--precision " + std::string(name_of(c.precision)) + " needs --device cuda; the CPU reference computes in fp32";
     }},
    {[](const TrainConfig& c) { return c.val_resize >= c.image_size; },
     [](const TrainConfig& c) {
       return "--val-resize " + std::to_string(c.val_resize) + " is smaller than --image-size " + std::to_string(c.image_size) +
              ": the centre crop must fit in the resized image; give --val-resize at least " + std::to_string(c.image_size);
     }},
    {[](const TrainConfig& c) { return c.decode == ImageDecoding::Cpu || c.device != Device::Cpu; },
     [](const TrainConfig&) {
       return std::string("--decode gpu decodes on the GPU with nvJPEG and needs --device cuda; the CPU engine decodes with --decode cpu");
     }},
    {[](const TrainConfig& c) { return c.patience == 0 || c.target_accuracy > 0; },
     [](const TrainConfig& c) {
       return "--patience " + std::to_string(c.patience) +
              " counts evaluations at or above --target-accuracy, which is not set; pass --target-accuracy X, or "
              "--stop-after-no-improvement " + std::to_string(c.patience) + " to stop when the accuracy stops improving";
     }},
};

}  // namespace

void TrainConfig::validate() const {
  for (const TrainOption& row : train_options()) row.field.check(*this, row.name);
  optimizer_spec_for(*this);  // the rules of the chosen optimizer (e.g. Nesterov needs momentum)
  for (const CrossRule& rule : kCrossRules)
    if (!rule.holds(*this)) throw UserError(rule.refusal(*this));
}

std::string TrainConfig::to_json() const {
  std::string json = "{";
  for (const TrainOption& row : train_options()) {
    if (!row.json_key) continue;
    if (json.size() > 1) json += ',';
    json += json_quote(row.json_key) + ":" + row.field.to_json(*this);
  }
  return json + "}";
}

TrainConfig TrainConfig::from_json(const std::string& text, const std::string& what) {
  TrainConfig config;
  for (const auto& [key, value] : flat_json_members(text, what)) {
    if (is_retired_json_key(key)) continue;
    const TrainOption* row = train_option_for_key(key);
    if (!row) throw UserError(what + " records an option '" + key + "' that this version of scalebench does not know");
    if (!row->field.from_json(config, value))
      throw UserError(what + " records --" + row->name + " as " + value + ", which is not a value of that option");
  }
  return config;
}

}  // namespace sb
