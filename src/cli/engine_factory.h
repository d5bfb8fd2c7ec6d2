// Chooses the engine for --device: the CPU reference, or the CUDA backend where it is built.
#pragma once
#include <memory>
#include <thread>

#include "comm/communicator.h"
#include "core/startup_clock.h"
#include "data/dataset.h"
#include "train/engines/engine.h"
#include "train/train_config.h"

namespace sb {
// Throws UserError when --device cuda is asked of a build without the CUDA backend or a node without GPUs.
std::unique_ptr<Engine> make_engine(const TrainConfig& config, const Dataset& train, const Dataset& test,
                                    Communicator& comm, int local_rank, int local_size);
// Checks --device before any data is loaded.
void check_device_available(const TrainConfig& config, int local_size);

// --device cuda with one GPU per rank (DDP): creates the rank's CUDA context on another thread from
// construction, so that it overlaps what the command does meanwhile (reading the data); wait() joins it,
// timing what is left of it as the start-up part cuda_context, and so does the destructor. Nothing for
// other devices or a build without CUDA.
class CudaContextStart {
 public:
  CudaContextStart(const TrainConfig& config, int local_rank);
  ~CudaContextStart() { wait(); }
  CudaContextStart(const CudaContextStart&) = delete;
  CudaContextStart& operator=(const CudaContextStart&) = delete;
  void wait() {
    if (!thread_.joinable()) return;
    const StartupSpan context_startup(StartupPart::cuda_context);
    thread_.join();
  }

 private:
  std::thread thread_;
};
}  // namespace sb
