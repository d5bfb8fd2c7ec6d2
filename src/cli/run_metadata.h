// The results file's root attributes for a job.
#pragma once
#include "cli/runtime_info.h"
#include "comm/mpi_session.h"
#include "metrics/results_file.h"
#include "train/train_config.h"

namespace sb {
RunMetadata make_run_metadata(const MpiSession& session, const RuntimeInfo& info, const TrainConfig& config,
                              int64_t world_size);
}  // namespace sb
