// --optimizer-overlap on one rank: with nothing to average, the buckets carry only the optimizer's updates,
// each queued on the side stream as soon as backward has finished the bucket's gradients. That changes
// when parameters are updated, never what is computed: under deterministic engines with the choices fixed
// (autotune off), the parameters, the batch-norm statistics, the optimizer state and its step count after
// every step are bit for bit those of the one update after backward, for mnist-cnn and a WRN, with SGD with
// momentum and Adam, in TF32 and bf16, eagerly and through the step's CUDA graph. Runs without MPI (a
// communicator of one rank) and skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "data/sampler.h"
#include "data/synthetic.h"
#include "gpu_test_util.h"
#include "relative_l2.h"
#include "train/cuda/cuda_engine.h"
#include "train/micro_batches.h"
#include "train/optimizer_overlap.h"
#include "unit/solo_communicator.h"

namespace sb {
namespace {

constexpr size_t kSteps = 5;  // two eager, the capture, two replays
constexpr int64_t kBatch = 8;

struct Case {
  const char* model;
  SyntheticShape shape;
  const char* optimizer;
  Precision precision;
  bool cuda_graph;
};

TrainConfig config_for(const Case& c, bool overlap) {
  TrainConfig config;
  config.model = c.model;
  config.device = Device::Cuda;
  config.precision = c.precision;
  config.deterministic = true;
  config.autotune = false;
  config.cuda_graph = c.cuda_graph;
  config.optimizer_overlap = overlap;
  config.dropout = true;
  config.batch_size = kBatch;
  config.optimizer = parse_optimizer_kind(c.optimizer);
  config.lr = config.optimizer == OptimizerKind::Sgd ? 0.01 : 1e-3;
  config.momentum = config.optimizer == OptimizerKind::Sgd ? 0.9 : 0.0;
  config.seed = 17;
  config.eval_batch_size = 16;
  config.bucket_mib = 0.25;  // several buckets, most of them updated while backward runs
  config.plan_cache = "";
  return config;
}

std::vector<EngineState> states_after_steps(const TrainConfig& config, const TrainTest& data) {
  testing::SoloCommunicator comm;
  auto engine = make_cuda_engine(config, data.train, data.test, comm, 0, 1);
  DistributedSampler sampler(data.train.size(), 1, 0, true, config.seed, false);
  std::vector<std::vector<int64_t>> steps = step_batches(sampler.indices(0), kBatch, config.accumulate_steps, false);
  steps.resize(kSteps);
  std::vector<EngineState> out;
  uint64_t position = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    engine->train_step(steps[k], StepInfo{0, static_cast<int64_t>(k), position, config.lr});
    position += steps[k].size();
    engine->synchronize();
    out.push_back(engine->save_state());
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(SingleRankOptimizerOverlap, StateEqualsTheOneUpdateBitForBit) {
  SKIP_WITHOUT_GPU();
  const SyntheticShape mnist{1, 28, 28, 10}, small_wrn{3, 8, 8, 10};
  const Case cases[] = {
      {"mnist-cnn", mnist, "adam", Precision::TF32, true},
      {"wrn", small_wrn, "sgd", Precision::BF16, true},
      {"wrn", small_wrn, "adam", Precision::TF32, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.model) + " " + c.optimizer + " " + name_of(c.precision) + (c.cuda_graph ? " graph" : " eager"));
    ASSERT_TRUE(optimizer_overlap_applies(config_for(c, true)));
    const TrainTest data = make_synthetic(c.shape, 128, 16, 5);
    const std::vector<EngineState> on = states_after_steps(config_for(c, true), data);
    const std::vector<EngineState> off = states_after_steps(config_for(c, false), data);
    ASSERT_EQ(on.size(), off.size());
    for (size_t k = 0; k < on.size(); ++k) {
      SCOPED_TRACE("after step " + std::to_string(k + 1));
      EXPECT_EQ(on[k].optimizer_steps, static_cast<int64_t>(k + 1)) << "one advance of the step counter per step";
      ASSERT_TRUE(same_bits(on[k].params, off[k].params))
          << "parameters differ by relative L2 " << testing::relative_l2(on[k].params, off[k].params);
      EXPECT_TRUE(same_bits(on[k].buffers, off[k].buffers)) << "batch-norm statistics differ";
      ASSERT_EQ(on[k].optimizer_state.size(), off[k].optimizer_state.size());
      for (size_t s = 0; s < on[k].optimizer_state.size(); ++s)
        EXPECT_TRUE(same_bits(on[k].optimizer_state[s].second, off[k].optimizer_state[s].second))
            << on[k].optimizer_state[s].first << " differs";
    }
    for (float p : on.back().params) ASSERT_TRUE(std::isfinite(p));
  }
}

}  // namespace
}  // namespace sb
