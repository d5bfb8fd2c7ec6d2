#include "train/train_config.h"

#include "core/error.h"
#include "models/registry.h"

namespace sb {

const char* scaling_name(Scaling s) { return name_of(s); }

bool TrainConfig::fold_bn_statistics_on() const {
  if (fold_bn_statistics) return *fold_bn_statistics;
  if (precision != Precision::FP16 || layout != Layout::NHWC) return false;
  const ModelInfo* m = find_model(model);
  return m && m->fp16_folds_bn_statistics;  // an unknown model is refused with its own message
}

int64_t TrainConfig::per_rank_batch(int ranks) const {
  if (parallel == Parallel::Dp) {
    // One process drives every replica: its batch is --batch-size per replica under weak scaling (as each
    // DDP rank takes it), the whole batch under strong scaling.
    if (ranks != 1) {
      throw UserError("--parallel dp runs in one process that drives all its replicas, but " + std::to_string(ranks) +
                      " ranks were launched; launch one (mpirun -n 1) with --replicas N, or use --parallel ddp for one "
                      "rank per GPU");
    }
    if (scaling == Scaling::Weak) return batch_size * replicas;
    if (batch_size % replicas != 0) {
      throw UserError("--batch-size " + std::to_string(batch_size) + " (the global batch under --scaling strong) does "
                      "not divide by --replicas " + std::to_string(replicas) + "; pick a multiple of " +
                      std::to_string(replicas) + " or use --scaling weak");
    }
    return batch_size;
  }
  if (scaling == Scaling::Weak) return batch_size;
  if (batch_size % ranks != 0) {
    throw UserError("--batch-size " + std::to_string(batch_size) + " (the global batch under --scaling strong) does not divide by " +
                    std::to_string(ranks) + " ranks; pick a multiple of " + std::to_string(ranks) +
                    " or use --scaling weak");
  }
  return batch_size / ranks;
}

std::string TrainConfig::checkpoint_path() const {
  if (!checkpoint.empty()) return checkpoint;
  return out.empty() ? std::string("scalebench.ckpt.h5") : out + ".ckpt.h5";
}

}  // namespace sb
