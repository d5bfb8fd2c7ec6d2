// The CUDA engine's step graphs (train/engines/cuda/step_graphs.h): one graph per step slot, each replaying the
// work captured for its slot; a capture the runtime refuses leaves no graph behind and the stream usable;
// graphs whose buffer has grown since their capture are stale until captured again.
#include <gtest/gtest.h>

#include <cstdint>

#include "gpu_test_util.h"
#include "nn/cuda/device_buffer.h"
#include "train/engines/cuda/step_graphs.h"

namespace sb::cuda {
namespace {

using gputest::DeviceMem;

int32_t read_int(const DeviceMem& m) { return gputest::download_raw<int32_t>(m.get(), 1).at(0); }

TEST(StepGraphs, EachSlotReplaysItsOwnCapture) {
  SKIP_WITHOUT_GPU();
  CudaStream stream = CudaStream::create_non_blocking();
  DeviceMem dst(sizeof(int32_t));
  ASSERT_CUDA(cudaMemset(dst.get(), 0, sizeof(int32_t)));
  StepGraphs graphs;
  int captured = 0;
  ASSERT_TRUE(graphs.capture(stream, [&](int slot) {
    ++captured;
    // Slot 0 writes 0x01 bytes, slot 1 0x02 bytes.
    ASSERT_CUDA(cudaMemsetAsync(dst.get(), slot + 1, sizeof(int32_t), stream.get()));
  }));
  EXPECT_EQ(captured, kStepSlots);
  stream.synchronize();
  EXPECT_EQ(read_int(dst), 0) << "captured work does not run until launched";
  for (int slot : {1, 0, 1}) {
    graphs.launch(slot, stream.get());
    stream.synchronize();
    EXPECT_EQ(read_int(dst), (slot + 1) * 0x01010101) << "slot " << slot;
  }
}

TEST(StepGraphs, RefusedCaptureKeepsNoGraph) {
  SKIP_WITHOUT_GPU();
  CudaStream stream = CudaStream::create_non_blocking();
  StepGraphs graphs;
  // Synchronising the capturing stream invalidates the capture.
  EXPECT_FALSE(graphs.capture(stream, [&](int) { (void)cudaStreamSynchronize(stream.get()); }));
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
    return graphs.capture(stream, [&](int slot) {
      // Reads the buffer's address now, as a layer does when its step is captured.
      ASSERT_CUDA(cudaMemsetAsync(target.data(), slot + 1, sizeof(int32_t), stream.get()));
    });
  };
  ASSERT_TRUE(capture());
  EXPECT_FALSE(graphs.stale()) << "nothing allocated since the capture";
  graphs.launch(0, stream.get());
  stream.synchronize();

  target.ensure(size_t{1} << 20);  // grown elsewhere: its old block is freed
  EXPECT_TRUE(graphs.stale()) << "the graphs hold the freed block's address";
  graphs.drop();
  EXPECT_FALSE(graphs.stale()) << "dropped graphs are not stale: there are none";

  ASSERT_CUDA(cudaMemset(target.data(), 0, sizeof(int32_t)));
  ASSERT_TRUE(capture());
  EXPECT_FALSE(graphs.stale()) << "captured again with the new block";
  graphs.launch(1, stream.get());
  stream.synchronize();
  EXPECT_EQ(gputest::download_raw<int32_t>(target.data(), 1).at(0), 0x02020202) << "the new capture writes the new block";

  DeviceBuffer unrelated;
  unrelated.ensure(sizeof(int32_t));
  EXPECT_TRUE(graphs.stale()) << "any allocation counts: the graphs can't tell which buffers they hold";
}

}  // namespace
}  // namespace sb::cuda
