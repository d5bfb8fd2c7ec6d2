// Weight gradients on their own stream (ContextOptions::parallel_wgrad, on in every run; the test turns it
// off through CudaEngineOptions::adjust_context) change when the work runs, never what it computes: under deterministic cuDNN engines, with the engine choices fixed (autotune off: the heuristics'
// first, the same in both runs), the parameters after every step are bit for bit those of the one-stream
// run, for conv nets with Linear layers (mnist-cnn, cifar-cnn) and one with residual blocks and fused
// batch norm (the WRN), in fp32, TF32 and bf16, eagerly and with two eager steps, the capture and two
// replays of the step's CUDA graph, and with gradient accumulation (micro-batches sum into the gradient
// after each backward). Every rank first checks on its own GPU alone; then, with one GPU per rank, the
// ranks together with buckets small enough that several all-reduce while backward runs: a bucket launched
// before its weight gradients were written would average stale values and part the runs at once.
//
// Against the CPU reference the side stream is the default, so tests/gpu/mpi/test_gpu_model_steps.cpp and
// tests/gpu/test_network_small.cpp hold it to the existing tolerances.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/mpi_communicator.h"
#include "data/synthetic.h"
#include "engine_steps.h"
#include "gtest_param_name.h"
#include "nn/cuda/context.h"
#include "relative_l2.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"

namespace sb {
namespace {

constexpr size_t kSteps = 5;  // two eager, the capture, two replays
constexpr int64_t kBatch = 8;

struct Case {
  const char* model;
  SyntheticShape shape;
  Precision precision;
  bool cuda_graph;
  int accumulate;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return testing::gtest_param_name(c.model) + "_" + std::string(name_of(c.precision)) + (c.cuda_graph ? "_graph" : "_eager") +
         (c.accumulate > 1 ? "_accumulate" + std::to_string(c.accumulate) : "");
}

TrainConfig config_for(const Case& c) {
  TrainConfig config = testing::comparable_engine_config(c.model, c.precision, c.cuda_graph, kBatch, "sgd", 11);
  config.accumulate_steps = c.accumulate;
  return config;
}

// The parameters before and after each of this rank's first kSteps steps of epoch 0, on the GPU of
// `world_rank` (a rank alone still takes its own GPU), with the weight-gradient stream or without it.
std::vector<std::vector<float>> params_after_steps(const Case& c, bool parallel_wgrad, const TrainTest& data, Communicator& comm,
                                                   int world_rank) {
  cuda::CudaEngineOptions options;
  if (!parallel_wgrad) options.adjust_context = [](cuda::ContextOptions& o) { o.parallel_wgrad = false; };
  std::vector<std::vector<float>> out;
  for (EngineState& state : testing::states_after_steps(config_for(c), data, comm, kSteps, world_rank, options))
    out.push_back(std::move(state.params));
  return out;
}

void expect_same_bits(const Case& c, Communicator& comm, int world_rank, const std::string& where) {
  const TrainTest data = make_synthetic(c.shape, 256, 16, 5);
  const auto on = params_after_steps(c, true, data, comm, world_rank);
  const auto off = params_after_steps(c, false, data, comm, world_rank);
  ASSERT_EQ(on.size(), off.size());
  for (size_t k = 1; k < on.size(); ++k)
    ASSERT_TRUE(on[k] == off[k]) << where << ": parameters after step " << k << " differ by relative L2 "
                                 << testing::relative_l2(on[k], off[k]) << " with the weight-gradient stream";
  EXPECT_GT(testing::relative_l2(on.back(), on.front()), 1e-5) << where << ": the steps must move the parameters";
}

class ParallelWgradAlone : public ::testing::TestWithParam<Case> {};
class ParallelWgradAcrossRanks : public ::testing::TestWithParam<Case> {};

TEST_P(ParallelWgradAlone, ParametersEqualOneStreamBitForBit) {
  auto world = MpiCommunicator::world();
  if (world->allreduce_min(visible_gpu_count()) < 1) GTEST_SKIP() << "no CUDA device";
  auto alone = world->split(world->rank(), 0);
  expect_same_bits(GetParam(), *alone, world->rank(), "rank " + std::to_string(world->rank()) + " alone");
}

TEST_P(ParallelWgradAcrossRanks, ParametersEqualOneStreamWithEarlyBuckets) {
  auto world = MpiCommunicator::world();
  if (world->size() < 2 || world->allreduce_min(visible_gpu_count()) < world->size())
    GTEST_SKIP() << "needs one GPU per rank and at least 2 ranks";
  expect_same_bits(GetParam(), *world, world->rank(), std::to_string(world->size()) + " ranks");
}

constexpr SyntheticShape kMnist{1, 28, 28, 10}, kCifar{3, 32, 32, 10}, kSmallWrn{3, 8, 8, 10};

// Every model in every precision, eager and replayed, and accumulation.
std::vector<Case> alone_cases() {
  std::vector<Case> out;
  for (Precision p : {Precision::FP32, Precision::TF32, Precision::BF16})
    for (bool graph : {false, true}) {
      out.push_back({"mnist-cnn", kMnist, p, graph, 1});
      out.push_back({"cifar-cnn", kCifar, p, graph, 1});
    }
  out.push_back({"wrn", kSmallWrn, Precision::BF16, true, 1});
  out.push_back({"wrn", kSmallWrn, Precision::FP32, false, 1});
  out.push_back({"mnist-cnn", kMnist, Precision::BF16, true, 2});
  out.push_back({"cifar-cnn", kCifar, Precision::FP32, false, 3});
  return out;
}

// Across ranks the buckets are what is new: each model once eager and once replayed, and the accumulated
// step, whose buckets start only after the last micro-batch.
std::vector<Case> across_rank_cases() {
  return {{"mnist-cnn", kMnist, Precision::FP32, false, 1}, {"mnist-cnn", kMnist, Precision::BF16, true, 1},
          {"cifar-cnn", kCifar, Precision::TF32, true, 1},  {"wrn", kSmallWrn, Precision::BF16, true, 1},
          {"mnist-cnn", kMnist, Precision::BF16, true, 2}};
}

INSTANTIATE_TEST_SUITE_P(Models, ParallelWgradAlone, ::testing::ValuesIn(alone_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Models, ParallelWgradAcrossRanks, ::testing::ValuesIn(across_rank_cases()), case_name);

}  // namespace
}  // namespace sb
