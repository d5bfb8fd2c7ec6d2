#include "train/engines/dp/dp_config.h"

#include "core/error.h"

namespace sb {

int64_t data_parallel_batch(const TrainConfig& config, int ranks) {
  if (ranks != 1) {
    throw UserError("--parallel dp runs in one process that drives all its replicas, but " + std::to_string(ranks) +
                    " ranks were launched; launch one (mpirun -n 1) with --replicas N, or use --parallel ddp for one "
                    "rank per GPU");
  }
  const int64_t replicas = config.replicas;
  if (config.scaling == Scaling::Weak) return config.batch_size * replicas;
  if (config.batch_size % replicas != 0) {
    throw UserError("--batch-size " + std::to_string(config.batch_size) + " (the global batch under --scaling strong) does "
                    "not divide by --replicas " + std::to_string(replicas) + "; pick a multiple of " +
                    std::to_string(replicas) + " or use --scaling weak");
  }
  return config.batch_size;
}

std::string replicas_need_dp(const TrainConfig& config) {
  return "--replicas " + std::to_string(config.replicas) + " needs --parallel dp; --parallel ddp runs one replica per "
         "rank (launch " + std::to_string(config.replicas) + " ranks instead)";
}

}  // namespace sb
