#include "train/engines/engine_base.h"

#include "data/image/encoded_images.h"
#include "models/registry.h"

namespace sb {

std::vector<int64_t> EngineBase::train_shard_sizes() const {
  return train_.streamed() ? train_.encoded->shard_sizes() : std::vector<int64_t>{};
}

EngineBase::EngineBase(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm)
    : config_(config),
      train_(train),
      test_(test),
      comm_(comm),
      log_probabilities_(model_info(config.model).outputs_log_probabilities),
      augmentation_(config.augment ? cifar_augmentation() : BatchOptions{}) {}

}  // namespace sb
