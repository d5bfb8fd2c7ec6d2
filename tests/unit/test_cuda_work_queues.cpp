// CUDA_DEVICE_MAX_CONNECTIONS: scalebench's default where the environment has none, the user's value kept.
#include "core/cuda_work_queues.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace sb {
namespace {

TEST(CudaWorkQueues, AreThirtyTwoWhereTheEnvironmentSetsNone) {
  unsetenv(kCudaWorkQueuesVariable);
  set_cuda_work_queues_unless_set();
  ASSERT_NE(std::getenv(kCudaWorkQueuesVariable), nullptr);
  EXPECT_EQ(std::string(std::getenv(kCudaWorkQueuesVariable)), "32");
  EXPECT_EQ(cuda_work_queues(), "32");
}

TEST(CudaWorkQueues, ReadAsCudasDefaultOfEightWhereNothingSetsThem) {
  unsetenv(kCudaWorkQueuesVariable);
  EXPECT_EQ(cuda_work_queues(), "8");
}

TEST(CudaWorkQueues, KeepTheValueTheUserSet) {
  setenv(kCudaWorkQueuesVariable, "4", 1);
  set_cuda_work_queues_unless_set();
  EXPECT_EQ(std::string(std::getenv(kCudaWorkQueuesVariable)), "4");
  EXPECT_EQ(cuda_work_queues(), "4");
  unsetenv(kCudaWorkQueuesVariable);
}

}  // namespace
}  // namespace sb
