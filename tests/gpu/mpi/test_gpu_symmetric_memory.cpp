// The symmetric memory window changes where the gradient buckets are all-reduced (a buffer every rank
// registers as an NCCL symmetric window, summed after a 1/ranks scale on the way in), not what the step
// computes: against the run without it (CudaEngineOptions::symmetric_memory off). On 2
// ranks a pre-multiplied sum of two values is exactly NCCL's average, so after every step the parameters,
// the batch-norm statistics and the optimizer state are bit for bit those of the run without the window;
// on more ranks the sums may be taken in another order (and in fp32 where the ring adds in bf16), so they
// agree to rounding. Covered: mnist-cnn and a WRN, fp32 and bf16 wires (--allreduce-bf16), eagerly and
// through the capture and replays of the step's CUDA graph, with and without the optimizer overlap, small
// buckets (all in the window) and 40 MiB ones (above kLargestSymmetricAllreduceBytes: averaged by the ring,
// beside the small last bucket that still goes through the window). The parameters are also the same on every rank.
// Needs one GPU per rank, at least 2 ranks and NCCL 2.27 or later on one host; skips otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "comm/cuda/nccl_window.h"
#include "comm/mpi_communicator.h"
#include "core/cuda_check.h"
#include "core/dtype.h"
#include "data/synthetic.h"
#include "engine_steps.h"
#include "gtest_param_name.h"
#include "relative_l2.h"
#include "train/engines/bucket_plan.h"
#include "train/engines/cuda/cuda_engine.h"
#include "train/engines/cuda/device_info.h"
#include "train/engines/cuda/gradient_buckets.h"

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
  bool optimizer_overlap;
  double bucket_mib;  // small: several buckets at several offsets of the window; above 16: some bypass it
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return testing::gtest_param_name(c.model) + "_" + c.optimizer + "_" + std::string(name_of(c.precision)) +
         (c.cuda_graph ? "_graph" : "_eager") + (c.allreduce_bf16 ? "_allreduce_bf16" : "") +
         (c.optimizer_overlap ? "_overlap" : "") + "_bucket_" + std::to_string(static_cast<int>(c.bucket_mib * 100)) + "centimib";
}

TrainConfig config_for(const Case& c) {
  TrainConfig config = testing::comparable_engine_config(c.model, c.precision, c.cuda_graph, kBatch, c.optimizer, 17);
  config.allreduce_bf16 = c.allreduce_bf16;
  config.bucket_mib = c.bucket_mib;
  return config;
}

// The states after each step, in the window or with the engine's option that keeps the buckets on plain
// buffers; the case's optimizer overlap likewise.
std::vector<EngineState> states(const Case& c, bool symmetric, const TrainTest& data, Communicator& world) {
  cuda::CudaEngineOptions options;
  options.symmetric_memory = symmetric;
  options.optimizer_overlap = c.optimizer_overlap;
  return testing::states_after_steps(config_for(c), data, world, kSteps, world.rank(), options);
}

// The largest element difference, relative to the largest element of `plain`.
double max_difference(const std::vector<float>& window, const std::vector<float>& plain) {
  double largest = 0, difference = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    largest = std::max(largest, std::fabs(static_cast<double>(plain[i])));
    difference = std::max(difference, std::fabs(static_cast<double>(window[i]) - plain[i]));
  }
  return largest > 0 ? difference / largest : difference;
}

// With 2 ranks: the same bits, after every step. With more the sums may be taken in another order (and
// in fp32 where the ring adds in bf16): after the first step, within rounding of the wire's dtype.
void expect_same(const std::vector<float>& window, const std::vector<float>& plain, int ranks, bool bf16_wire,
                 const std::string& what) {
  ASSERT_EQ(window.size(), plain.size()) << what;
  if (ranks == 2) {
    EXPECT_TRUE(testing::same_bits(window, plain)) << what << " differs by relative L2 " << testing::relative_l2(window, plain);
  } else {
    // fp32: the sums' rounding. bf16: the ring rounds its partial sum to bf16 after each of its additions
    // and NCCL's symmetric kernels once, as the bucket test below bounds it (2 ulps of bf16 per rank). A state
    // that depends on the gradient nonlinearly moves by as much relative to its largest value: Adadelta's
    // acc_delta after one step, eps * x / (1 + x) with x = (1 - rho) g^2 / eps, by at most half the
    // gradient's relative change (0.021 seen on 4 H200s, against 2^-8 per bf16 rounding).
    const double tolerance = bf16_wire ? 2.0 * ranks / 256.0 : 1e-5;
    EXPECT_LT(max_difference(window, plain), tolerance) << what;
  }
}

// Why this job cannot run the tests below ("" when it can): one GPU per rank, 2 ranks at least, and
// symmetric windows where they run.
std::string why_skip(Communicator& world) {
  if (world.size() < 2 || world.allreduce_min(visible_gpu_count()) < world.size())
    return "needs one GPU per rank and at least 2 ranks";
  const std::string refusal = cuda::symmetric_window_refusal(world);
  return refusal.empty() ? std::string() : "no symmetric windows here: " + refusal;
}

class SymmetricMemory : public ::testing::TestWithParam<Case> {};

TEST_P(SymmetricMemory, StateEqualsTheRunWithoutTheWindow) {
  auto world = MpiCommunicator::world();
  if (const std::string why = why_skip(*world); !why.empty()) GTEST_SKIP() << why;
  const Case c = GetParam();
  const TrainTest data = make_synthetic(c.shape, 256, 16, 5);
  const std::vector<EngineState> window = states(c, true, data, *world);
  const std::vector<EngineState> plain = states(c, false, data, *world);
  ASSERT_EQ(window.size(), plain.size());
  // On more than 2 ranks the first step's rounding differences grow through the steps that follow
  // (dropout, ReLU and batch norm amplify them); the bucket test below checks every bucket's average.
  const size_t compared_steps = world->size() == 2 ? window.size() : 2;
  for (size_t k = 1; k < compared_steps; ++k) {
    SCOPED_TRACE("after step " + std::to_string(k));
    EXPECT_EQ(window[k].optimizer_steps, static_cast<int64_t>(k));
    expect_same(window[k].params, plain[k].params, world->size(), c.allreduce_bf16, "parameters");
    expect_same(window[k].buffers, plain[k].buffers, world->size(), c.allreduce_bf16, "batch-norm statistics");
    ASSERT_EQ(window[k].optimizer_state.size(), plain[k].optimizer_state.size());
    for (size_t s = 0; s < window[k].optimizer_state.size(); ++s) {
      const auto& [name, values] = window[k].optimizer_state[s];
      EXPECT_EQ(name, plain[k].optimizer_state[s].first);
      expect_same(values, plain[k].optimizer_state[s].second, world->size(), c.allreduce_bf16, name);
    }
    EXPECT_TRUE(testing::same_on_every_rank(*world, window[k].params)) << "parameters differ across ranks";
  }
  EXPECT_GT(testing::relative_l2(window.back().params, window.front().params), 1e-6) << "the steps must move the parameters";
  for (float p : window.back().params) ASSERT_TRUE(std::isfinite(p)) << "the steps must keep the parameters finite";
}

// Each rank's own random gradients, averaged bucket by bucket by GradientBuckets with and without the
// window, against the average computed on the host in double: fp32 and bf16 wires, buckets of one
// element, odd sizes at odd offsets, and buckets above kLargestSymmetricAllreduceBytes on one wire or both
// between those in the window, on every rank count.
TEST(SymmetricMemoryBuckets, EveryBucketHoldsTheAverageOfTheRanksGradients) {
  auto world = MpiCommunicator::world();
  if (const std::string why = why_skip(*world); !why.empty()) GTEST_SKIP() << why;
  CHECK_CUDA(cudaSetDevice(world->rank() % visible_gpu_count()));
  cuda::NcclCommunicator nccl(*world);
  // Above the window's limit on either wire (two of them, so that the bf16 wire's packed buffer holds
  // buckets at two offsets), and above it on the fp32 wire only.
  const int64_t above_both = static_cast<int64_t>(kLargestSymmetricAllreduceBytes / sizeof(uint16_t)) + 4099;
  const int64_t above_fp32 = static_cast<int64_t>(kLargestSymmetricAllreduceBytes / sizeof(float)) + 4099;
  const std::vector<int64_t> sizes = {above_both, 1, above_fp32, 1000003, 77, above_both + 1, 4096, 13};  // from the end back
  int64_t n = 0;
  for (int64_t size : sizes) n += size;
  std::vector<Bucket> buckets;
  int64_t end = n;
  for (int64_t size : sizes) {
    buckets.push_back({end - size, end});
    end -= size;
  }
  // Every rank draws every rank's gradients, so that each knows the average.
  std::vector<std::vector<float>> all(static_cast<size_t>(world->size()), std::vector<float>(static_cast<size_t>(n)));
  for (size_t r = 0; r < all.size(); ++r) {
    std::mt19937 rng(static_cast<unsigned>(1000 + r));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& g : all[r]) g = normal(rng);
  }
  cuda::CudaStream compute = cuda::CudaStream::create_non_blocking();
  cuda::DeviceBuffer grads;
  for (bool bf16 : {false, true})
    for (bool symmetric : {true, false}) {
      SCOPED_TRACE(std::string(bf16 ? "bf16" : "fp32") + " wire, " + (symmetric ? "window" : "plain"));
      std::vector<double> want(static_cast<size_t>(n), 0.0);
      for (const auto& rank_grads : all)
        for (size_t i = 0; i < want.size(); ++i) {
          // What goes on the wire: the rank's gradient, rounded to bf16 with that wire.
          const float on_wire = bf16 ? bf16_bits_to_float(float_to_bf16_bits(rank_grads[i])) : rank_grads[i];
          want[i] += static_cast<double>(on_wire) / world->size();
        }
      float* device = grads.ensure_as<float>(static_cast<size_t>(n));
      const std::vector<float>& mine = all[static_cast<size_t>(world->rank())];
      CHECK_CUDA(cudaMemcpy(device, mine.data(), mine.size() * sizeof(float), cudaMemcpyHostToDevice));
      {
        cuda::GradientBuckets reducer(buckets, device, n, nccl, compute.get(), bf16, symmetric);
        reducer.begin_step(0);
        reducer.finish();
        compute.synchronize();
      }
      std::vector<float> got(static_cast<size_t>(n));
      CHECK_CUDA(cudaMemcpy(got.data(), device, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
      // fp32: the sums' rounding; bf16: the sum rounded to bf16 once or after each of the ring's additions.
      const double tolerance = bf16 ? 2.0 * world->size() / 256.0 : 1e-5;
      double worst = 0;
      size_t worst_at = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const double error = std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i]));
        if (error > worst) worst = error, worst_at = i;
      }
      EXPECT_LT(worst, tolerance) << "element " << worst_at << ": " << got[worst_at] << " against " << want[worst_at];
      EXPECT_TRUE(testing::same_on_every_rank(*world, got)) << "the average differs across ranks";
    }
}

constexpr SyntheticShape kMnist{1, 28, 28, 10}, kSmallWrn{3, 8, 8, 10};

INSTANTIATE_TEST_SUITE_P(Models, SymmetricMemory,
                         ::testing::Values(Case{"mnist-cnn", kMnist, "sgd", Precision::FP32, true, false, true, 0.25},
                                           Case{"mnist-cnn", kMnist, "adadelta", Precision::TF32, false, true, false, 0.25},
                                           Case{"wrn", kSmallWrn, "sgd", Precision::FP32, false, false, false, 0.25},
                                           Case{"wrn", kSmallWrn, "sgd", Precision::FP32, true, false, true, 40},
                                           Case{"wrn", kSmallWrn, "adam", Precision::BF16, true, true, true, 0.25},
                                           Case{"wrn", kSmallWrn, "adam", Precision::BF16, false, true, false, 40}),
                         case_name);

}  // namespace
}  // namespace sb
