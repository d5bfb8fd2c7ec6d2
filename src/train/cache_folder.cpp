#include "train/cache_folder.h"

#include "nn/plan_store.h"

namespace sb {

std::string cache_folder(const TrainConfig& config) {
  return config.plan_cache ? *config.plan_cache : default_plan_cache_dir();
}

}  // namespace sb
