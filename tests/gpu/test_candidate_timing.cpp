// How autotuning times a candidate (nn/cuda/fastest_round.h, candidate_ms): how many launches each kind of
// candidate costs, counted, with device memsets standing in for kernels of known length.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include "gpu_test_util.h"
#include "nn/cuda/fastest_round.h"

namespace {

using namespace sb;
using namespace sb::gputest;

class CandidateTiming : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (buffer_) cudaFree(buffer_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  // A launch that sets `bytes` of device memory, counted.
  std::function<bool()> memset_of(size_t bytes) {
    if (!buffer_) {
      EXPECT_EQ(cudaMalloc(&buffer_, bytes), cudaSuccess);
    }
    return [this, bytes] {
      ++launches_;
      return cudaMemsetAsync(buffer_, launches_ & 0xff, bytes, stream_) == cudaSuccess;
    };
  }

  static constexpr size_t kLongBytes = size_t{8} << 30;  // over 1 ms at the HBM bandwidths of today
  cudaStream_t stream_ = nullptr;
  void* buffer_ = nullptr;
  int launches_ = 0;
};

TEST_F(CandidateTiming, AShortKernelGetsAWarmUpALoneRunAndFullRounds) {
  const auto ms = cuda::candidate_ms(stream_, 3, /*drop_over_ms=*/0.0f, memset_of(4096));
  ASSERT_TRUE(ms.has_value());
  EXPECT_GT(*ms, 0.0f);
  EXPECT_EQ(launches_, 1 + 1 + cuda::kTimingRounds * 3);
}

TEST_F(CandidateTiming, ALongKernelGetsRoundsOfOneLaunch) {
  size_t free = 0, total = 0;
  ASSERT_CUDA(cudaMemGetInfo(&free, &total));
  if (free < kLongBytes + (size_t{1} << 30)) GTEST_SKIP() << "needs 9 GiB of free device memory";
  const auto ms = cuda::candidate_ms(stream_, 3, /*drop_over_ms=*/0.0f, memset_of(kLongBytes));
  ASSERT_TRUE(ms.has_value());
  EXPECT_GT(*ms, cuda::kRoundMs);
  EXPECT_EQ(launches_, 1 + 1 + cuda::kTimingRounds * 1);
}

TEST_F(CandidateTiming, ACandidateOutOfReachStopsAfterItsLoneRun) {
  // Even a tiny memset takes longer than a picosecond: it cannot win against that.
  const auto ms = cuda::candidate_ms(stream_, 3, /*drop_over_ms=*/1e-9f, memset_of(4096));
  ASSERT_TRUE(ms.has_value());
  EXPECT_GT(*ms, 1e-9f);
  EXPECT_EQ(launches_, 2);
}

TEST_F(CandidateTiming, ACandidateThatFailsToRunHasNoTimeAndNoMoreLaunches) {
  int launches = 0;
  const auto ms = cuda::candidate_ms(stream_, 3, 0.0f, [&] {
    ++launches;
    return false;
  });
  EXPECT_FALSE(ms.has_value());
  EXPECT_EQ(launches, 1);
}

}  // namespace
