#include "cli/engine_factory.h"

#include "cli/gradient_sync_table.h"
#include "core/error.h"
#include "train/engines/cpu_engine.h"
#include "train/engines/dp/cpu_replicas.h"
#include "train/engines/dp/data_parallel_engine.h"
#ifdef SCALEBENCH_HAVE_CUDA
#include "train/engines/cuda/context_start.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/dp/cuda/cuda_replicas.h"
#endif

namespace sb {

void check_device_available(const TrainConfig& config, int local_size) {
  if (config.device != Device::Cuda) return;
#ifdef SCALEBENCH_HAVE_CUDA
  const int gpus = visible_gpu_count();
  if (gpus == 0) {
    throw UserError("--device cuda: no CUDA device is visible on this node (check CUDA_VISIBLE_DEVICES and the "
                    "job's GPU request, e.g. --gres=gpu:N), or use --device cpu");
  }
  if (config.parallel == Parallel::Dp && config.replicas > gpus) {
    throw UserError("--parallel dp --replicas " + std::to_string(config.replicas) + " needs as many GPUs but " +
                    std::to_string(gpus) + " are visible; lower --replicas or make more GPUs visible (CUDA_VISIBLE_DEVICES)");
  }
  (void)local_size;
#else
  (void)local_size;
  throw UserError("--device cuda: this scalebench was built without the CUDA backend; rebuild with CUDA, cuDNN "
                  "and NCCL available (cmake -DSCALEBENCH_CUDA=ON), or use --device cpu");
#endif
}

CudaContextStart::CudaContextStart(const TrainConfig& config, int local_rank) {
#ifdef SCALEBENCH_HAVE_CUDA
  if (config.device == Device::Cuda && config.parallel == Parallel::Ddp) thread_ = std::thread(create_cuda_context, local_rank);
#else
  (void)config;
  (void)local_rank;
#endif
}

std::unique_ptr<Engine> make_engine(const TrainConfig& config, const Dataset& train, const Dataset& test,
                                    Communicator& comm, int local_rank, int local_size) {
  if (config.parallel == Parallel::Dp && config.device == Device::Cpu) {
    return std::make_unique<DataParallelEngine>(std::make_unique<CpuReplicas>(config, train, test, comm), train.size(),
                                                test.size());
  }
  if (config.device == Device::Cpu)
    return std::make_unique<CpuEngine>(config, train, test, comm, local_size, gradient_sync_for(Device::Cpu));
  check_device_available(config, local_size);
#ifdef SCALEBENCH_HAVE_CUDA
  if (config.parallel == Parallel::Dp) {
    return std::make_unique<DataParallelEngine>(make_cuda_replicas(config, train, test), train.size(),
                                                test.size());
  }
  cuda::CudaEngineOptions options;
  options.gradient_sync = &gradient_sync_for(Device::Cuda);
  return make_cuda_engine(config, train, test, comm, local_rank, local_size, options);
#else
  (void)local_rank;
  return nullptr;
#endif
}

}  // namespace sb
