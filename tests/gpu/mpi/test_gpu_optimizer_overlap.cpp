// The optimizer overlap changes when each bucket's parameters are updated (on the communication stream,
// right after the bucket's all-reduce, while backward still runs on the layers below), never what the
// update computes: under deterministic engines with the choices fixed (autotune off), after every step the
// parameters, the batch-norm statistics, the optimizer state and its step count are bit for bit those of
// the one update after every all-reduce (CudaEngineOptions::optimizer_overlap off), for mnist-cnn and a WRN (batch norm, residual blocks, fused
// batch norm), with SGD with momentum, Adadelta and Adam, in fp32, TF32 and bf16 (whose compute-dtype
// weight copy the ranged updates write), with the bf16 all-reduce, eagerly and through the capture and
// replays of the step's CUDA graph. The buckets are small, so that several are updated while backward
// runs: an update landing before a layer's last read of its weights would part the runs. The parameters
// and the optimizer state are also the same on every rank.
// Needs one GPU per rank and at least 2 ranks; skips otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm/mpi_communicator.h"
#include "data/synthetic.h"
#include "engine_steps.h"
#include "gtest_param_name.h"
#include "relative_l2.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/optimizer_overlap.h"

namespace sb {
namespace {

constexpr size_t kSteps = 5;  // two eager, the capture, two replays
constexpr int64_t kBatch = 8;

struct Case {
  const char* model;
  SyntheticShape shape;
  const char* optimizer;  // as given to --optimizer
  Precision precision;
  bool cuda_graph;
  bool allreduce_bf16;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return testing::gtest_param_name(c.model) + "_" + c.optimizer + "_" + std::string(name_of(c.precision)) +
         (c.cuda_graph ? "_graph" : "_eager") + (c.allreduce_bf16 ? "_allreduce_bf16" : "");
}

TrainConfig config_for(const Case& c) {
  TrainConfig config = testing::comparable_engine_config(c.model, c.precision, c.cuda_graph, kBatch, c.optimizer, 13);
  config.allreduce_bf16 = c.allreduce_bf16;  // the small buckets are reduced and updated while backward runs
  return config;
}

// The states after each step, with the overlap or with the engine's option that turns it off.
std::vector<EngineState> states(const Case& c, bool overlap, const TrainTest& data, Communicator& world) {
  cuda::CudaEngineOptions options;
  options.optimizer_overlap = overlap;
  EXPECT_EQ(cuda::overlap_refusal(options, config_for(c), world.size()).empty(), overlap);
  return testing::states_after_steps(config_for(c), data, world, kSteps, world.rank(), options);
}

class OptimizerOverlap : public ::testing::TestWithParam<Case> {};

TEST_P(OptimizerOverlap, StateEqualsTheOneUpdateBitForBitOnEveryRank) {
  auto world = MpiCommunicator::world();
  if (world->size() < 2 || world->allreduce_min(visible_gpu_count()) < world->size())
    GTEST_SKIP() << "needs one GPU per rank and at least 2 ranks";
  const Case c = GetParam();
  ASSERT_TRUE(optimizer_overlap_applies(config_for(c), world->size())) << "the case must use the overlap";
  const TrainTest data = make_synthetic(c.shape, 256, 16, 5);
  const std::vector<EngineState> on = states(c, true, data, *world);
  const std::vector<EngineState> off = states(c, false, data, *world);
  ASSERT_EQ(on.size(), off.size());
  for (size_t k = 1; k < on.size(); ++k) {
    SCOPED_TRACE("after step " + std::to_string(k));
    EXPECT_EQ(on[k].optimizer_steps, static_cast<int64_t>(k)) << "one advance of the step counter per step";
    EXPECT_EQ(off[k].optimizer_steps, static_cast<int64_t>(k));
    ASSERT_TRUE(testing::same_bits(on[k].params, off[k].params))
        << "parameters differ by relative L2 " << testing::relative_l2(on[k].params, off[k].params);
    EXPECT_TRUE(testing::same_bits(on[k].buffers, off[k].buffers)) << "batch-norm statistics differ";
    ASSERT_EQ(on[k].optimizer_state.size(), off[k].optimizer_state.size());
    for (size_t s = 0; s < on[k].optimizer_state.size(); ++s) {
      const auto& [name, values] = on[k].optimizer_state[s];
      EXPECT_EQ(name, off[k].optimizer_state[s].first);
      EXPECT_TRUE(testing::same_bits(values, off[k].optimizer_state[s].second))
          << name << " differs by relative L2 " << testing::relative_l2(values, off[k].optimizer_state[s].second);
      EXPECT_TRUE(testing::same_on_every_rank(*world, values)) << name << " differs across ranks";
    }
    EXPECT_TRUE(testing::same_on_every_rank(*world, on[k].params)) << "parameters differ across ranks";
  }
  EXPECT_GT(testing::relative_l2(on.back().params, on.front().params), 1e-6) << "the steps must move the parameters";
  for (float p : on.back().params) ASSERT_TRUE(std::isfinite(p)) << "the steps must keep the parameters finite";
}

constexpr SyntheticShape kMnist{1, 28, 28, 10}, kSmallWrn{3, 8, 8, 10};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* optimizer : {"sgd", "adadelta", "adam"}) {
    out.push_back({"mnist-cnn", kMnist, optimizer, Precision::FP32, true, false});
    out.push_back({"wrn", kSmallWrn, optimizer, Precision::FP32, false, false});
  }
  out.push_back({"mnist-cnn", kMnist, "adam", Precision::BF16, true, false});
  out.push_back({"wrn", kSmallWrn, "adam", Precision::BF16, true, false});
  out.push_back({"mnist-cnn", kMnist, "sgd", Precision::TF32, false, true});
  out.push_back({"wrn", kSmallWrn, "adadelta", Precision::BF16, true, true});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Models, OptimizerOverlap, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace sb
