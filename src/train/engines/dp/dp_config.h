// The rules of --parallel dp that join options and ranks.
#pragma once
#include <cstdint>
#include <string>

#include "train/train_config.h"

namespace sb {

// The one rank's batch under --parallel dp: --batch-size per replica under weak scaling (as each DDP rank
// takes it), the whole batch under strong scaling, which must then divide by --replicas. Throws
// UserError when `ranks` is not 1 or the batch does not divide.
int64_t data_parallel_batch(const TrainConfig& config, int ranks);

// The refusal of --replicas N > 1 without --parallel dp.
std::string replicas_need_dp(const TrainConfig& config);

}  // namespace sb
