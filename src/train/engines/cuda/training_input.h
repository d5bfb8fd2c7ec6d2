// The CUDA engine's input pipeline (data/cuda/input_pipeline.h) for a run: its options read from the
// run's configuration, made on the current device by the engine's factory and handed to the engine.
#pragma once
#include <memory>

#include "comm/communicator.h"
#include "data/cuda/input_pipeline.h"
#include "data/dataset.h"
#include "train/train_config.h"

namespace sb::cuda {

// The pipeline options of `config` on this rank of `comm` in `format`; local_ranks share the node's cores
// among their workers.
InputPipelineOptions input_pipeline_options(const TrainConfig& config, const Dataset& train, const Communicator& comm,
                                            BatchFormat format, int local_ranks);

// The run's pipeline, waiting for the GPU under the collective watchdog of `comm`. `train`, `test` and
// `comm` must outlive it.
std::unique_ptr<InputPipeline> make_training_input(const TrainConfig& config, const Dataset& train, const Dataset& test,
                                                   const Communicator& comm, int local_ranks);

}  // namespace sb::cuda
