// The run's cache folder: where the cuDNN plan cache (docs/cudnn.md) and the decoded-data cache
// (data/data_cache.h) keep their files.
#pragma once
#include <string>

#include "train/train_config.h"

namespace sb {

// --plan-cache DIR, else the default folder (default_plan_cache_dir, nn/plan_store.h); "" with
// --no-plan-cache (no caches).
std::string cache_folder(const TrainConfig& config);

}  // namespace sb
