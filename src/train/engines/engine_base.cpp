#include "train/engines/engine_base.h"

#include "data/image_data_sets.h"
#include "models/registry.h"

namespace sb {

EngineFacts EngineBase::data_facts() const {
  EngineFacts facts;
  facts.train_size = train_.size();
  facts.test_size = test_.size();
  facts.train_shard_sizes = shard_sizes(train_);
  return facts;
}

EngineBase::EngineBase(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm)
    : config_(config),
      train_(train),
      test_(test),
      comm_(comm),
      log_probabilities_(model_info(config.model).outputs_log_probabilities),
      augmentation_(config.augment ? cifar_augmentation() : BatchOptions{}) {}

}  // namespace sb
