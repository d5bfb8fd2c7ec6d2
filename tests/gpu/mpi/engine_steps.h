// What the multi-GPU engine tests share: a CUDA engine's run state after each of its first steps of epoch
// 0, and bit-for-bit comparisons of float vectors on one rank and across ranks.
#pragma once
#include <cstring>
#include <span>
#include <vector>

#include "comm/communicator.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/micro_batches.h"
#include "train/train_config.h"

namespace sb::testing {

// A run whose two variants can be compared bit for bit: deterministic cuDNN engines with the heuristics'
// first choices (autotune off, the same in both runs), keyed dropout masks (both runs draw the same),
// `batch` per rank, buckets of 0.25 MiB (several, most of them launched while backward runs), and the
// optimizer by name with a learning rate that moves the parameters in a few steps.
inline TrainConfig comparable_engine_config(const char* model, Precision precision, bool cuda_graph, int64_t batch,
                                            const char* optimizer, uint64_t seed) {
  TrainConfig config;
  config.model = model;
  config.device = Device::Cuda;
  config.precision = precision;
  config.deterministic = true;
  config.autotune = false;
  config.cuda_graph = cuda_graph;
  config.dropout = true;
  config.scaling = Scaling::Weak;
  config.batch_size = batch;
  config.optimizer = parse_optimizer_kind(optimizer);
  config.lr = config.optimizer == OptimizerKind::Adadelta ? 1.0 : config.optimizer == OptimizerKind::Sgd ? 0.01 : 1e-3;
  config.momentum = config.optimizer == OptimizerKind::Sgd ? 0.9 : 0.0;
  config.seed = seed;
  config.eval_batch_size = 16;
  config.bucket_mib = 0.25;
  return config;
}

// The run state before and after each of this rank's first `steps` steps of epoch 0, on the GPU of
// `device_rank` (a rank of a sub-communicator still takes its own GPU). With the CUDA graph on, steps 1
// and 2 run eagerly, step 3 captures and the rest replay. `options`: the engine's paths, the defaults unless
// the test compares one with its twin.
inline std::vector<EngineState> states_after_steps(const TrainConfig& config, const TrainTest& data, Communicator& comm,
                                                   size_t steps, int device_rank,
                                                   const cuda::CudaEngineOptions& options = {}) {
  auto engine = make_cuda_engine(config, data.train, data.test, comm, device_rank, comm.size(), options);
  DistributedSampler sampler(data.train.size(), comm.size(), comm.rank(), true, config.seed, false);
  std::vector<std::vector<int64_t>> batches =
      step_batches(sampler.indices(0), config.per_rank_batch(comm.size()), config.accumulate_steps, false);
  batches.resize(steps);
  std::vector<EngineState> out;
  out.push_back(engine->run_state().save());
  uint64_t position = 0;
  for (size_t k = 0; k < batches.size(); ++k) {
    engine->train_step(batches[k], StepInfo{0, static_cast<int64_t>(k), position, config.lr});
    position += batches[k].size();
    engine->synchronize();
    out.push_back(engine->run_state().save());
  }
  return out;
}

// Bit for bit (a NaN equals itself; 0 and -0 differ).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Whether rank 0's `mine` has the same bits as every rank's.
inline bool same_on_every_rank(Communicator& comm, const std::vector<float>& mine) {
  std::vector<float> root = mine;
  comm.broadcast(std::span<float>(root), 0);
  return comm.allreduce_min(same_bits(root, mine) ? 1 : 0) == 1;
}

}  // namespace sb::testing
