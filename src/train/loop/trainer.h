// The SPMD training loop: epochs of sharded steps, sharded evaluation, timings reduced across ranks,
// early stopping. It works on whatever communicator it is given (scale hands it sub-communicators).
// What the run measures and reports subscribes to the loop's events (train/run/train_observer.h).
#pragma once
#include "comm/communicator.h"
#include "train/checkpoint/data_identity.h"
#include "train/engines/engine.h"
#include "train/run/run_summary.h"
#include "train/run/train_observer.h"
#include "train/train_config.h"

namespace sb {

struct Checkpoint;
class MlLog;

// Runs config.epochs epochs (or fewer on early stop or a stop signal), from the start or from `resume`.
// `results` (the results file's writer, say) hears every event, after the run's printed lines and before
// its MLPerf log (train/reporting/run_reporting.h); each epoch's summary is complete on root. `data` is
// what checkpoints record about the data (train_command passes it; none: an empty identity, which no
// resume accepts). `mllog`: the run's MLPerf log (train/reporting/mllog.h), on rank 0 only. Collective
// over comm.
RunSummary train(const TrainConfig& config, Communicator& comm, Engine& engine, TrainObserver* results = nullptr,
                 const Checkpoint* resume = nullptr, const DataIdentity* data = nullptr, MlLog* mllog = nullptr);

}  // namespace sb
