// The NCCL runner of `scalebench comm` on 2 GPUs: every collective of the table (all-reduce,
// reduce-scatter, all-gather, broadcast), in every dtype, out of place and in place, is exact (#wrong 0,
// the check pattern's sums are exact in every dtype), and the figures follow nccl-tests' definitions
// (algbw from the mean over ranks, busbw = algbw x the collective's factor), with plain device
// buffers and with NCCL symmetric windows (which the buffers' growth deregisters and registers again; the
// sizes above kLargestSymmetricAllreduceBytes then use plain buffers, as training does).
// Runs under mpiexec -np 2 and skips unless every rank sees a GPU of its own.
#include <gtest/gtest.h>

#include "comm/allreduce_sweep.h"
#include "comm/collective.h"
#include "comm/cuda/allreduce_sweep_cuda.h"
#include "comm/mpi_communicator.h"
#include "train/engines/cuda/device_info.h"

namespace sb {
namespace {

class NcclAllreduceSweep : public ::testing::TestWithParam<bool> {};

TEST_P(NcclAllreduceSweep, BothFormsAreExactInEveryDtype) {
  auto world = MpiCommunicator::world();
  if (world->size() < 2 || world->allreduce_min(visible_gpu_count()) < world->size())
    GTEST_SKIP() << "needs one GPU per rank and at least 2 ranks";
  const bool symmetric = GetParam();
  cuda::CudaAllreduceSweep sweep(*world, world->rank(), symmetric);
  if (symmetric && !sweep.symmetric_refusal().empty()) GTEST_SKIP() << "no symmetric windows here: " << sweep.symmetric_refusal();
  if (!symmetric) { EXPECT_EQ(sweep.symmetric_refusal(), "") << "nothing to refuse when the windows were not asked for"; }
  const SweepSettings settings{3, 1};
  const int n = world->size();
  for (const Collective* c : {&kAllReduce, &kReduceScatter, &kAllGather, &kBroadcast}) {
    const double factor = c->busbw_factor(n);
    for (SweepDtype dtype : {SweepDtype::Fp32, SweepDtype::Fp64, SweepDtype::Bf16, SweepDtype::Fp16}) {
      // One element per rank, an odd count larger than the check pattern's period, and sizes that grow
      // the buffers in turn; the last is above kLargestSymmetricAllreduceBytes in every dtype (plain
      // buffers beside the windows).
      for (int64_t asked : {int64_t{n}, int64_t{1001}, int64_t{1} << 20, int64_t{1} << 24}) {
        const SweepPoint point{dtype, c->usable_count(asked, n), false, c->kind};
        SCOPED_TRACE(std::string(c->name) + " " + sweep_dtype_name(dtype) + " x " + std::to_string(point.count));
        const SweepResult r = sweep.run(point, settings);
        for (const SweepTiming& t : {r.out_of_place, r.in_place}) {
          EXPECT_EQ(t.wrong, 0);
          EXPECT_EQ(t.first_wrong_rank, -1);
          EXPECT_GT(t.time_us_min_rank, 0.0);
          EXPECT_LE(t.time_us_min_rank, t.time_us_mean * (1 + 1e-12));
          EXPECT_LE(t.time_us_mean, t.time_us_max_rank * (1 + 1e-12));
          EXPECT_NEAR(t.algbw_gbps, static_cast<double>(point.bytes()) / (t.time_us_mean * 1e-6) / 1e9, 1e-9 * t.algbw_gbps);
          EXPECT_NEAR(t.busbw_gbps, t.algbw_gbps * factor, 1e-9 * t.algbw_gbps);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Buffers, NcclAllreduceSweep, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "symmetric_windows" : "device_memory"; });

}  // namespace
}  // namespace sb
