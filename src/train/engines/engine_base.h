// What every engine holds the same way: the run's configuration, its training and test sets, the
// communicator, and the settings both engines take from them (the loss a model's output needs and
// the training augmentation).
#pragma once
#include "comm/communicator.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "train/engines/engine.h"
#include "train/train_config.h"

namespace sb {

class EngineBase : public Engine {
 protected:
  // The datasets and the communicator must outlive the engine.
  EngineBase(const TrainConfig& config, const Dataset& train, const Dataset& test, Communicator& comm);

  // The facts the datasets decide (sizes, shard sizes), with the engine's own filled in by the caller.
  EngineFacts data_facts() const;

  TrainConfig config_;
  const Dataset& train_;
  const Dataset& test_;
  Communicator& comm_;
  bool log_probabilities_;    // the model ends in LogSoftmax: NLL loss, else cross-entropy on logits
  BatchOptions augmentation_;  // of the training batches (--augment)
};

}  // namespace sb
