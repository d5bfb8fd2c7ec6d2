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

// One training run: what it trains, on which ranks, and who hears of it.
struct TrainRun {
  const TrainConfig& config;
  Communicator& comm;  // collective over it (scale hands the loop sub-communicators)
  Engine& engine;
  // Hears every event, after the run's printed lines and before its MLPerf log
  // (train/reporting/run_reporting.h): the results file's writer, say. None: nobody else listens.
  TrainObserver* results = nullptr;
  const Checkpoint* resume = nullptr;  // where the run continues; none: from the start
  // What checkpoints record about the data (train_command passes it); empty: no resume accepts them.
  DataIdentity data = {};
  MlLog* mllog = nullptr;  // the run's MLPerf log (train/reporting/mllog.h), on rank 0 only
};

// Runs config.epochs epochs (or fewer on early stop or a stop signal), from the start or from `resume`;
// each epoch's summary is complete on root. Collective over comm.
RunSummary train(const TrainRun& job);

}  // namespace sb
