// The RAII owners of nn/cuda/cuda_handles.h: each creates a working object, hands it over on a move
// (leaving the source empty), and a captured graph replays the work it captured, reading device memory
// at each launch; a refused capture comes back as a status, not a fault.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "gpu_test_util.h"
#include "nn/cuda/cuda_handles.h"

namespace sb::cuda {
namespace {

using gputest::DeviceMem;

// Reads on the legacy default stream, which does not wait for the non-blocking streams here: call it once the
// work that wrote `m` is known to be done.
int32_t read_int(const DeviceMem& m) {
  int32_t v = 0;
  EXPECT_EQ(cudaMemcpy(&v, m.get(), sizeof v, cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

// A cudaMemcpy from pageable host memory may return before its copy reaches the device, and it is queued on
// the legacy default stream, which the non-blocking streams do not wait for: without the device-wide wait,
// work queued next on them may read the old value, the more likely the busier other processes keep the GPU.
void write_int(const DeviceMem& m, int32_t v) {
  EXPECT_EQ(cudaMemcpy(m.get(), &v, sizeof v, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(CudaHandles, StreamRunsQueuedWorkAndMovesOver) {
  SKIP_WITHOUT_GPU();
  CudaStream a = CudaStream::create_non_blocking();
  ASSERT_TRUE(a);
  DeviceMem dst(sizeof(int32_t));
  ASSERT_CUDA(cudaMemsetAsync(dst.get(), 0x11, sizeof(int32_t), a.get()));
  CudaStream b = std::move(a);
  EXPECT_FALSE(a) << "a moved-from stream is empty";
  ASSERT_TRUE(b);
  b.synchronize();
  EXPECT_EQ(b.query(), cudaSuccess);
  EXPECT_EQ(read_int(dst), 0x11111111);
}

TEST(CudaHandles, StreamOfTheGreatestPriority) {
  SKIP_WITHOUT_GPU();
  int least = 0, greatest = 0;
  ASSERT_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  EXPECT_EQ(CudaStream::greatest_priority(), greatest);
  CudaStream s = CudaStream::create_non_blocking(greatest);
  int priority = least;
  ASSERT_CUDA(cudaStreamGetPriority(s.get(), &priority));
  EXPECT_EQ(priority, greatest);
  unsigned int flags = 0;
  ASSERT_CUDA(cudaStreamGetFlags(s.get(), &flags));
  EXPECT_EQ(flags & cudaStreamNonBlocking, cudaStreamNonBlocking);
}

TEST(CudaHandles, MoveAssignedEventTimesTheWorkBetweenTwoRecords) {
  SKIP_WITHOUT_GPU();
  CudaStream stream = CudaStream::create_non_blocking();
  CudaEvent start = CudaEvent::create();
  CudaEvent end = CudaEvent::create();
  CudaEvent spare = CudaEvent::create();
  end = std::move(spare);  // releases the first end event, takes over the spare one
  EXPECT_FALSE(spare);
  ASSERT_TRUE(end);
  DeviceMem buffer(64 << 20);
  start.record(stream.get());
  ASSERT_CUDA(cudaMemsetAsync(buffer.get(), 0, buffer.bytes(), stream.get()));
  end.record(stream.get());
  end.synchronize();
  EXPECT_EQ(end.query(), cudaSuccess);
  EXPECT_GT(CudaEvent::elapsed_ms(start, end), 0.0f) << "a 64 MiB memset takes time";
}

TEST(CudaHandles, DisableTimingEventOrdersTwoStreams) {
  SKIP_WITHOUT_GPU();
  CudaStream producer = CudaStream::create_non_blocking();
  CudaStream consumer = CudaStream::create_non_blocking();
  CudaEvent ready = CudaEvent::create(cudaEventDisableTiming);
  DeviceMem a(sizeof(int32_t)), b(sizeof(int32_t));
  write_int(a, 0);
  ASSERT_CUDA(cudaMemsetAsync(a.get(), 0x22, sizeof(int32_t), producer.get()));
  ready.record(producer.get());
  consumer.wait(ready.get());
  ASSERT_CUDA(cudaMemcpyAsync(b.get(), a.get(), sizeof(int32_t), cudaMemcpyDeviceToDevice, consumer.get()));
  consumer.synchronize();
  EXPECT_EQ(read_int(b), 0x22222222);
}

TEST(CudaHandles, CapturedGraphReplaysWithTheCurrentDeviceValues) {
  SKIP_WITHOUT_GPU();
  CudaStream stream = CudaStream::create_non_blocking();
  DeviceMem src(sizeof(int32_t)), dst(sizeof(int32_t));
  CudaEvent start = CudaEvent::create();
  CudaEvent end = CudaEvent::create();

  stream.begin_capture(cudaStreamCaptureModeThreadLocal);
  start.record_external(stream.get());
  ASSERT_CUDA(cudaMemcpyAsync(dst.get(), src.get(), sizeof(int32_t), cudaMemcpyDeviceToDevice, stream.get()));
  end.record_external(stream.get());
  CudaGraph graph;
  ASSERT_EQ(stream.end_capture(graph), cudaSuccess);
  ASSERT_TRUE(graph);
  CudaGraphExec exec;
  ASSERT_EQ(CudaGraphExec::instantiate(graph, cudaGraphInstantiateFlagUseNodePriority, exec), cudaSuccess);
  ASSERT_TRUE(exec);
  graph.reset();  // the executable graph does not need the captured one
  EXPECT_FALSE(graph);

  for (int32_t value : {7, 8}) {
    write_int(src, value);
    exec.launch(stream.get());
    end.synchronize();
    EXPECT_EQ(read_int(dst), value) << "each launch reads src anew";
    EXPECT_GE(CudaEvent::elapsed_ms(start, end), 0.0f) << "the event nodes record at each launch";
  }
  CudaGraphExec moved = std::move(exec);
  EXPECT_FALSE(exec);
  write_int(src, 9);
  moved.launch(stream.get());
  stream.synchronize();
  EXPECT_EQ(read_int(dst), 9);
}

TEST(CudaHandles, RefusedCaptureReturnsItsStatus) {
  SKIP_WITHOUT_GPU();
  CudaStream stream = CudaStream::create_non_blocking();
  stream.begin_capture(cudaStreamCaptureModeThreadLocal);
  // Synchronising a capturing stream is illegal: it invalidates the capture.
  EXPECT_NE(cudaStreamSynchronize(stream.get()), cudaSuccess);
  CudaGraph graph;
  EXPECT_NE(stream.end_capture(graph), cudaSuccess);
  EXPECT_FALSE(graph);
  (void)cudaGetLastError();
  // The stream works on after the failed capture.
  DeviceMem dst(sizeof(int32_t));
  ASSERT_CUDA(cudaMemsetAsync(dst.get(), 0x33, sizeof(int32_t), stream.get()));
  stream.synchronize();
  EXPECT_EQ(read_int(dst), 0x33333333);
}

TEST(CudaHandles, PinnedArrayCarriesAnAsynchronousCopy) {
  SKIP_WITHOUT_GPU();
  CudaStream stream = CudaStream::create_non_blocking();
  PinnedArray<int64_t> host(4);
  ASSERT_NE(host.data(), nullptr);
  EXPECT_EQ(host.size(), 4u);
  cudaPointerAttributes attributes{};
  ASSERT_CUDA(cudaPointerGetAttributes(&attributes, host.data()));
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost) << "page-locked, not pageable";
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<int64_t>(i) * 1000 + 1;
  DeviceMem device(4 * sizeof(int64_t));
  ASSERT_CUDA(cudaMemcpyAsync(device.get(), host.data(), 4 * sizeof(int64_t), cudaMemcpyHostToDevice, stream.get()));
  stream.synchronize();
  PinnedArray<int64_t> moved = std::move(host);
  EXPECT_EQ(host.data(), nullptr);
  EXPECT_EQ(host.size(), 0u);
  ASSERT_CUDA(cudaMemcpyAsync(moved.data(), device.get(), 4 * sizeof(int64_t), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  EXPECT_EQ((std::vector<int64_t>(moved.data(), moved.data() + 4)), (std::vector<int64_t>{1, 1001, 2001, 3001}));
}

}  // namespace
}  // namespace sb::cuda
