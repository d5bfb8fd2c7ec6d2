// Shared pieces that both engines need: the model spec for a config and dataset, the optimizer spec and
// schedule from the config, and the dropout stream key of a rank.
#pragma once
#include <memory>

#include "data/dataset.h"
#include "models/registry.h"
#include "optim/optimizer.h"
#include "optim/optimizer_spec.h"
#include "optim/schedule.h"
#include "train/train_config.h"

namespace sb {

// The model for the dataset's sample shape and classes; with config.dropout off every dropout layer
// has p = 0 (the identity).
LayerSpec model_spec_for(const TrainConfig& config, const Dataset& train);

// The optimizer setup of the run, every default resolved: the one place both engines take it from (the
// CPU engine through optimizer_for, the CUDA engine for its fused update). Throws UserError for an
// out-of-range option.
OptimizerSpec optimizer_spec_for(const TrainConfig& config);
std::unique_ptr<Optimizer> optimizer_for(const TrainConfig& config, int64_t parameter_count);
// The LR schedule; with --scale-lr the base LR is multiplied by the number of ranks.
std::unique_ptr<LrSchedule> schedule_for(const TrainConfig& config, int ranks);

// Different on every rank (each rank draws its own dropout masks, as DDP ranks do), fixed by the seed.
uint64_t dropout_stream_key(uint64_t seed, int rank);

}  // namespace sb
