// What the command line configures: the training run, plus the scaling-study and comm-sweep settings.
#pragma once
#include <string>
#include <vector>

#include "train/train_config.h"

namespace sb {

struct ScaleSettings {
  std::vector<int> gpus;   // empty: 1, 2, 4, ... up to the world size
  int warmup_epochs = 1;   // excluded from the study's figures
  std::vector<Parallel> parallel{Parallel::Ddp};  // the modes studied, each over every GPU count
};

struct CommSettings {
  int64_t min_bytes = 1024;
  int64_t max_bytes = 256ll << 20;
  std::vector<std::string> dtypes{"fp32", "bf16"};
  int iterations = 20;
  int warmup_iterations = 5;
};

struct CliConfig {
  TrainConfig train;
  ScaleSettings scale;
  CommSettings comm;
  bool help = false;
};

}  // namespace sb
