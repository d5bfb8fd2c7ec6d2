// The NCCL runner of `scalebench comm` on 2 GPUs: every dtype's out-of-place and in-place all-reduce is
// exact (#wrong 0, the check pattern's sums are exact in every dtype), and the figures follow
// nccl-tests' definitions (algbw from the mean over ranks, busbw = algbw x 2(n-1)/n), with plain device
// buffers and with NCCL symmetric windows (which the buffers' growth deregisters and registers again; the
// sizes above kLargestSymmetricAllreduceBytes then use plain buffers, as training does).
// Runs under mpiexec -np 2 and skips unless every rank sees a GPU of its own.
#include <gtest/gtest.h>

#include "comm/allreduce_sweep.h"
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
  const double factor = allreduce_busbw_factor(world->size());
  for (SweepDtype dtype : {SweepDtype::Fp32, SweepDtype::Fp64, SweepDtype::Bf16, SweepDtype::Fp16}) {
    // An odd count, larger than the check pattern's period, and sizes that grow the buffers in turn; the
    // last is above kLargestSymmetricAllreduceBytes in every dtype (plain buffers beside the windows).
    for (int64_t count : {int64_t{1}, int64_t{1001}, int64_t{1} << 20, int64_t{1} << 24}) {
      SCOPED_TRACE(std::string(sweep_dtype_name(dtype)) + " x " + std::to_string(count));
      const SweepPoint point{dtype, count, false};
      const SweepResult r = sweep.run(point, settings);
      for (const SweepTiming& t : {r.out_of_place, r.in_place}) {
        EXPECT_EQ(t.wrong, 0);
        EXPECT_GT(t.time_us_min_rank, 0.0);
        EXPECT_LE(t.time_us_min_rank, t.time_us_mean * (1 + 1e-12));
        EXPECT_LE(t.time_us_mean, t.time_us_max_rank * (1 + 1e-12));
        EXPECT_NEAR(t.algbw_gbps, static_cast<double>(point.bytes()) / (t.time_us_mean * 1e-6) / 1e9, 1e-9 * t.algbw_gbps);
        EXPECT_NEAR(t.busbw_gbps, t.algbw_gbps * factor, 1e-9 * t.algbw_gbps);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Buffers, NcclAllreduceSweep, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "symmetric_windows" : "device_memory"; });

}  // namespace
}  // namespace sb
