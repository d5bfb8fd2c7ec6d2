// The CUDA engine's step graphs (train/engines/cuda/step_graphs.h): one graph per step slot and input buffer,
// each replaying the work captured for its pair; a capture the runtime refuses leaves no graph behind and the stream usable;
// graphs whose buffer has grown since their capture are stale until captured again.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

#include "gpu_test_util.h"
#include "nn/cuda/device_buffer.h"
#include "train/engines/cuda/step_graphs.h"

namespace sb::cuda {
namespace {

using gputest::DeviceMem;

int32_t read_int(const DeviceMem& m) { return gputest::download_raw<int32_t>(m.get(), 1).at(0); }

TEST(StepGraphs, EachSlotAndBufferReplaysItsOwnCapture) {
  SKIP_WITHOUT_GPU();
  CudaStream stream = CudaStream::create_non_blocking();
  DeviceMem dst(sizeof(int32_t));
  ASSERT_CUDA(cudaMemset(dst.get(), 0, sizeof(int32_t)));
  StepGraphs graphs;
  constexpr int kBuffers = 3;
  int captured = 0;
  // Each pair writes bytes of its own value: 1 + slot * kBuffers + buffer.
  const auto value = [](int slot, int buffer) { return 1 + slot * kBuffers + buffer; };
  ASSERT_TRUE(graphs.capture(stream, kBuffers, [&](int slot, int buffer) {
    ++captured;
    ASSERT_CUDA(cudaMemsetAsync(dst.get(), value(slot, buffer), sizeof(int32_t), stream.get()));
  }));
  EXPECT_EQ(captured, kStepSlots * kBuffers);
  stream.synchronize();
  EXPECT_EQ(read_int(dst), 0) << "captured work does not run until launched";
  const std::pair<int, int> launches[] = {{1, 2}, {0, 0}, {1, 0}, {0, 2}, {0, 1}, {1, 1}};
  for (const auto& [slot, buffer] : launches) {
    graphs.launch(slot, buffer, stream.get());
    stream.synchronize();
    EXPECT_EQ(read_int(dst), value(slot, buffer) * 0x01010101) << "slot " << slot << ", buffer " << buffer;
  }
}

TEST(StepGraphs, RefusedCaptureKeepsNoGraph) {
  SKIP_WITHOUT_GPU();
  CudaStream stream = CudaStream::create_non_blocking();
  StepGraphs graphs;
  // Synchronising the capturing stream invalidates the capture.
  EXPECT_FALSE(graphs.capture(stream, 1, [&](int, int) { (void)cudaStreamSynchronize(stream.get()); }));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failed capture's error is cleared";
  DeviceMem dst(sizeof(int32_t));
  ASSERT_CUDA(cudaMemsetAsync(dst.get(), 0x05, sizeof(int32_t), stream.get()));
  stream.synchronize();
  EXPECT_EQ(read_int(dst), 0x05050505) << "the stream works on after the refused capture";
}

// What the engine does before each replay: a buffer the graphs write, grown after their capture by a path
// that knows nothing of them, makes them stale; dropped and captured again, they write the buffer's new
// block.
TEST(StepGraphs, ABufferGrownSinceTheCaptureMakesTheGraphsStale) {
  SKIP_WITHOUT_GPU();
  CudaStream stream = CudaStream::create_non_blocking();
  DeviceBuffer target;
  target.ensure(sizeof(int32_t));
  StepGraphs graphs;
  EXPECT_FALSE(graphs.stale()) << "no graphs yet";
  const auto capture = [&] {
    return graphs.capture(stream, 1, [&](int slot, int) {
      // Reads the buffer's address now, as a layer does when its step is captured.
      ASSERT_CUDA(cudaMemsetAsync(target.data(), slot + 1, sizeof(int32_t), stream.get()));
    });
  };
  ASSERT_TRUE(capture());
  EXPECT_FALSE(graphs.stale()) << "nothing allocated since the capture";
  graphs.launch(0, 0, stream.get());
  stream.synchronize();

  target.ensure(size_t{1} << 20);  // grown elsewhere: its old block is freed
  EXPECT_TRUE(graphs.stale()) << "the graphs hold the freed block's address";
  graphs.drop();
  EXPECT_FALSE(graphs.stale()) << "dropped graphs are not stale: there are none";

  ASSERT_CUDA(cudaMemset(target.data(), 0, sizeof(int32_t)));
  ASSERT_TRUE(capture());
  EXPECT_FALSE(graphs.stale()) << "captured again with the new block";
  graphs.launch(1, 0, stream.get());
  stream.synchronize();
  EXPECT_EQ(gputest::download_raw<int32_t>(target.data(), 1).at(0), 0x02020202) << "the new capture writes the new block";

  DeviceBuffer unrelated;
  unrelated.ensure(sizeof(int32_t));
  EXPECT_TRUE(graphs.stale()) << "any allocation counts: the graphs can't tell which buffers they hold";
}

}  // namespace
}  // namespace sb::cuda
