// Loading the data of a run, shared by `train` and `scale`: collective (a file missing on one node
// stops every rank with that rank's sentence), checked against the model and the largest rank count.
#pragma once
#include "comm/communicator.h"
#include "data/dataset_spec.h"
#include "train/train_config.h"

namespace sb {
// Throws UserError when the data can't be loaded, the model does not fit its samples, or the training
// set has fewer samples than `max_ranks`.
TrainTest load_training_data(Communicator& comm, const TrainConfig& config, const DatasetSpec& spec, int max_ranks);
}  // namespace sb
