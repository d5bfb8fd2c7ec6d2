// What the command line configures: the training run, plus the scaling-study and comm-sweep settings.
#pragma once
#include <string>
#include <vector>

#include "train/study/study_sweep.h"
#include "train/train_config.h"

namespace sb {

struct ScaleSettings {
  std::vector<int> gpus;   // empty: 1, 2, 4, ... up to the world size
  int settle_epochs = 1;   // run before the measured epochs, left out of the study's figures
  std::vector<SweepAxis> sweeps;  // --sweep-*: the options varied besides the GPU count
  int repeats = 1;         // runs of every configuration
};

struct CommSettings {
  int64_t min_bytes = 1024;
  int64_t max_bytes = 256ll << 20;
  std::vector<std::string> dtypes{"fp32", "bf16"};
  std::vector<std::string> collectives{"all-reduce"};  // names of comm/collective.h's rows
  int iterations = 20;
  int warmup_iterations = 5;
};

// The command line's defaults are TrainConfig's, but for the device: left to the machine (--device auto,
// resolved by cli/device_resolution.h before anything reads it).
inline TrainConfig command_line_train_defaults() {
  TrainConfig config;
  config.device = Device::Auto;
  return config;
}

struct CliConfig {
  TrainConfig train = command_line_train_defaults();
  ScaleSettings scale;
  CommSettings comm;
  bool list_models = false;  // info --models
  bool help = false;
};

}  // namespace sb
