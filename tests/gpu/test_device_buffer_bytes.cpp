// The device-memory count of DeviceBuffers (nn/cuda/device_buffer.h): what peak_allocated_bytes reports,
// PyTorch's max_memory_allocated() counterpart. Growth, release and moves each keep it exact.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <utility>

#include "gpu_test_util.h"
#include "nn/cuda/device_buffer.h"

namespace {

using namespace sb;

constexpr size_t kMiB = size_t{1} << 20;

int current_device() {
  int device = 0;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  return device;
}

TEST(DeviceBufferBytes, CountWhatIsHeldAndTheMostHeldAtOnce) {
  SKIP_WITHOUT_GPU();
  const int device = current_device();
  const size_t before = cuda::device_buffer_bytes(device);
  const size_t peak_before = cuda::device_buffer_peak_bytes(device);
  {
    cuda::DeviceBuffer a, b;
    a.ensure(3 * kMiB);
    b.ensure(5 * kMiB + 1);  // rounded up to 256 bytes
    EXPECT_EQ(cuda::device_buffer_bytes(device), before + 3 * kMiB + 5 * kMiB + 256);
    a.ensure(kMiB);  // smaller: no new block
    EXPECT_EQ(cuda::device_buffer_bytes(device), before + 3 * kMiB + 5 * kMiB + 256);
    a.ensure(7 * kMiB);  // grows: the old block goes
    EXPECT_EQ(cuda::device_buffer_bytes(device), before + 7 * kMiB + 5 * kMiB + 256);
    EXPECT_GE(cuda::device_buffer_peak_bytes(device), std::max(peak_before, before + 12 * kMiB + 256));

    cuda::DeviceBuffer moved(std::move(a));  // a move holds the same block: nothing counted twice
    EXPECT_EQ(moved.bytes(), 7 * kMiB);
    cuda::DeviceBuffer assigned;
    assigned.ensure(kMiB);
    assigned = std::move(b);  // the assigned-to block goes
    EXPECT_EQ(cuda::device_buffer_bytes(device), before + 7 * kMiB + 5 * kMiB + 256);
  }
  EXPECT_EQ(cuda::device_buffer_bytes(device), before);
  EXPECT_GE(cuda::device_buffer_peak_bytes(device), before + 12 * kMiB + 256);
}

}  // namespace
