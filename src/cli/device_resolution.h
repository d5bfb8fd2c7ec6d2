// Resolves --device auto on every rank together, before the configuration is checked or recorded.
#pragma once
#include "comm/mpi_session.h"
#include "train/train_config.h"

namespace sb {

// Collective: sets `config.device` to cpu or cuda (auto becomes cuda only when the CUDA backend is
// built and every rank sees a GPU) and prints the run's first line on rank 0, "device: cpu (...)",
// after `line_prefix` (comm's output is nccl-tests' format, whose comments start with "# ").
void resolve_device_on_ranks(MpiSession& session, TrainConfig& config, const char* line_prefix = "");

}  // namespace sb
