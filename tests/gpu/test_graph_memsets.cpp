// Memset nodes of a captured graph replaced by kernel nodes (train/engines/cuda/graph_memsets.h): the same bytes
// written, pitched rows and the three element sizes included, every dependency kept, at the captured kernels' priority.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/elementwise.h"
#include "nn/cuda/cuda_handles.h"
#include "train/engines/cuda/graph_memsets.h"

namespace sb::cuda {
namespace {

using gputest::DeviceMem;

std::vector<cudaGraphNode_t> nodes_of(cudaGraph_t graph) {
  size_t n = 0;
  EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &n), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(n);
  EXPECT_EQ(cudaGraphGetNodes(graph, nodes.data(), &n), cudaSuccess);
  return nodes;
}

int count_of(cudaGraph_t graph, cudaGraphNodeType wanted) {
  int count = 0;
  for (cudaGraphNode_t node : nodes_of(graph)) {
    cudaGraphNodeType type{};
    EXPECT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
    count += type == wanted ? 1 : 0;
  }
  return count;
}

cudaMemsetParams memset_params(void* dst, size_t pitch, unsigned value, unsigned element_size, size_t width,
                               size_t height) {
  cudaMemsetParams p{};
  p.dst = dst;
  p.pitch = pitch;
  p.value = value;
  p.elementSize = element_size;
  p.width = width;
  p.height = height;
  return p;
}

TEST(GraphMemsets, SameBytesEveryElementSizeAndDependenciesKept) {
  SKIP_WITHOUT_GPU();
  constexpr size_t kPitch = 32, kRows = 3, kBytes = kPitch * kRows;
  DeviceMem pitched(kBytes), copy(kBytes), words(7 * 4), bytes(5);
  ASSERT_CUDA(cudaMemset(pitched.get(), 0xA5, kBytes));
  ASSERT_CUDA(cudaMemset(copy.get(), 0, kBytes));
  ASSERT_CUDA(cudaMemset(words.get(), 0, 7 * 4));
  ASSERT_CUDA(cudaMemset(bytes.get(), 0, 5));

  CudaGraph graph;
  cudaGraph_t raw = nullptr;
  ASSERT_CUDA(cudaGraphCreate(&raw, 0));
  graph = CudaGraph(raw);
  // 5 halves in each of 3 rows 32 bytes apart, then a copy of the whole region that must see them.
  cudaGraphNode_t rows = nullptr, copy_node = nullptr, word_node = nullptr, byte_node = nullptr;
  const cudaMemsetParams row_fill = memset_params(pitched.get(), kPitch, 0xBEEF, 2, 5, kRows);
  ASSERT_CUDA(cudaGraphAddMemsetNode(&rows, raw, nullptr, 0, &row_fill));
  ASSERT_CUDA(cudaGraphAddMemcpyNode1D(&copy_node, raw, &rows, 1, copy.get(), pitched.get(), kBytes,
                                       cudaMemcpyDeviceToDevice));
  const cudaMemsetParams word_fill = memset_params(words.get(), 0, 0x12345678u, 4, 7, 1);
  ASSERT_CUDA(cudaGraphAddMemsetNode(&word_node, raw, &copy_node, 1, &word_fill));
  const cudaMemsetParams byte_fill = memset_params(bytes.get(), 0, 0x3C, 1, 5, 1);
  ASSERT_CUDA(cudaGraphAddMemsetNode(&byte_node, raw, &word_node, 1, &byte_fill));

  EXPECT_EQ(replace_memset_nodes(raw, 0), 3);
  EXPECT_EQ(count_of(raw, cudaGraphNodeTypeMemset), 0);
  EXPECT_EQ(count_of(raw, cudaGraphNodeTypeKernel), 3);
  // The copy still depends on the row fill, now a kernel.
  size_t deps = 0;
  ASSERT_CUDA(cudaGraphNodeGetDependencies(copy_node, nullptr, nullptr, &deps));
  ASSERT_EQ(deps, 1u);
  cudaGraphNode_t dep = nullptr;
  ASSERT_CUDA(cudaGraphNodeGetDependencies(copy_node, &dep, nullptr, &deps));
  cudaGraphNodeType type{};
  ASSERT_CUDA(cudaGraphNodeGetType(dep, &type));
  EXPECT_EQ(type, cudaGraphNodeTypeKernel);
  size_t edges = 0;
  ASSERT_CUDA(cudaGraphGetEdges(raw, nullptr, nullptr, nullptr, &edges));
  EXPECT_EQ(edges, 3u) << "fill -> copy -> word fill -> byte fill";

  CudaGraphExec exec;
  ASSERT_CUDA(CudaGraphExec::instantiate(graph, 0, exec));
  CudaStream stream = CudaStream::create_non_blocking();
  exec.launch(stream.get());
  stream.synchronize();

  const auto copied = gputest::download_raw<uint8_t>(copy.get(), kBytes);
  for (size_t r = 0; r < kRows; ++r)
    for (size_t b = 0; b < kPitch; ++b) {
      const uint8_t expected = b < 10 ? (b % 2 == 0 ? 0xEF : 0xBE) : 0xA5;  // little-endian halves, then untouched
      EXPECT_EQ(copied[r * kPitch + b], expected) << "row " << r << " byte " << b;
    }
  for (uint32_t w : gputest::download_raw<uint32_t>(words.get(), 7)) EXPECT_EQ(w, 0x12345678u);
  for (uint8_t b : gputest::download_raw<uint8_t>(bytes.get(), 5)) EXPECT_EQ(b, 0x3C);
}

// Contiguous, aligned memsets of whole 16-byte words (written 16 bytes a store) in each element size: the
// value repeated exactly over the region, and not a byte beyond it.
TEST(GraphMemsets, WholeWordMemsetsWriteTheRegionOnly) {
  SKIP_WITHOUT_GPU();
  constexpr size_t kRegion = 80, kBuffer = 96;
  struct Fill {
    unsigned value, element_size;
    uint8_t bytes[4];  // the value's bytes in memory, little-endian
  };
  for (const Fill& f : {Fill{0x12345678u, 4, {0x78, 0x56, 0x34, 0x12}}, Fill{0xBEEF, 2, {0xEF, 0xBE, 0xEF, 0xBE}},
                        Fill{0x3C, 1, {0x3C, 0x3C, 0x3C, 0x3C}}}) {
    SCOPED_TRACE("element size " + std::to_string(f.element_size));
    DeviceMem region(kBuffer);
    ASSERT_CUDA(cudaMemset(region.get(), 0xA5, kBuffer));
    cudaGraph_t raw = nullptr;
    ASSERT_CUDA(cudaGraphCreate(&raw, 0));
    CudaGraph graph(raw);
    cudaGraphNode_t node = nullptr;
    const cudaMemsetParams fill = memset_params(region.get(), 0, f.value, f.element_size, kRegion / f.element_size, 1);
    ASSERT_CUDA(cudaGraphAddMemsetNode(&node, raw, nullptr, 0, &fill));
    EXPECT_EQ(replace_memset_nodes(raw, 0), 1);
    CudaGraphExec exec;
    ASSERT_CUDA(CudaGraphExec::instantiate(graph, 0, exec));
    CudaStream stream = CudaStream::create_non_blocking();
    exec.launch(stream.get());
    stream.synchronize();
    const auto got = gputest::download_raw<uint8_t>(region.get(), kBuffer);
    for (size_t b = 0; b < kBuffer; ++b) EXPECT_EQ(got[b], b < kRegion ? f.bytes[b % 4] : 0xA5) << "byte " << b;
  }
}

TEST(GraphMemsets, CapturedStreamMemsetsBecomeKernels) {
  SKIP_WITHOUT_GPU();
  CudaStream stream = CudaStream::create_non_blocking();
  DeviceMem a(4096), b(4096);
  stream.begin_capture(cudaStreamCaptureModeThreadLocal);
  ASSERT_CUDA(cudaMemsetAsync(a.get(), 0x11, 4096, stream.get()));
  ASSERT_CUDA(cudaMemcpyAsync(b.get(), a.get(), 4096, cudaMemcpyDeviceToDevice, stream.get()));
  ASSERT_CUDA(cudaMemsetAsync(a.get(), 0x22, 100, stream.get()));
  CudaGraph graph;
  ASSERT_CUDA(stream.end_capture(graph));
  EXPECT_EQ(replace_memset_nodes(graph.get(), 0), 2);
  CudaGraphExec exec;
  ASSERT_CUDA(CudaGraphExec::instantiate(graph, 0, exec));
  exec.launch(stream.get());
  stream.synchronize();
  const auto in_a = gputest::download_raw<uint8_t>(a.get(), 4096);
  const auto in_b = gputest::download_raw<uint8_t>(b.get(), 4096);
  for (size_t i = 0; i < 4096; ++i) {
    ASSERT_EQ(in_b[i], 0x11) << i;  // the copy ran after the first fill and before the second
    ASSERT_EQ(in_a[i], i < 100 ? 0x22 : 0x11) << i;
  }
}

int priority_of(cudaGraphNode_t kernel) {
  cudaKernelNodeAttrValue value{};
  EXPECT_EQ(cudaGraphKernelNodeGetAttribute(kernel, cudaLaunchAttributePriority, &value), cudaSuccess);
  return value.priority;
}

// A step's memsets run at the priority of its kernels, so that none of them queues behind the input
// decoding's blocks (CudaStream::compute_priority, below the all-reduces and above the decoding where the
// device has the levels).
TEST(GraphMemsets, ReplacementsRunAtTheCapturedKernelsPriority) {
  SKIP_WITHOUT_GPU();
  const int compute = CudaStream::compute_priority();
  EXPECT_GE(compute, CudaStream::greatest_priority()) << "lower numbers run first";
  EXPECT_LE(compute, CudaStream::least_priority());
  int least = 0, greatest = 0;
  ASSERT_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  if (least - greatest >= 2) {
    EXPECT_LT(compute, CudaStream::least_priority());
    EXPECT_GT(compute, CudaStream::greatest_priority());
  }
  CudaStream stream = CudaStream::create_non_blocking(compute);
  constexpr int64_t kFloats = 1024;
  DeviceMem a(kFloats * 4), b(kFloats * 4);
  stream.begin_capture(cudaStreamCaptureModeThreadLocal);
  ASSERT_CUDA(cudaMemsetAsync(a.get(), 0, kFloats * 4, stream.get()));
  kernels::scale(a.get(), b.get(), 2.0f, kFloats, DType::F32, stream.get());
  ASSERT_CUDA(cudaMemsetAsync(a.get(), 0, 100, stream.get()));
  CudaGraph graph;
  ASSERT_CUDA(stream.end_capture(graph));
  EXPECT_EQ(replace_memset_nodes(graph.get(), compute), 2);
  int kernels_seen = 0;
  for (cudaGraphNode_t node : nodes_of(graph.get())) {
    cudaGraphNodeType type{};
    ASSERT_CUDA(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    ++kernels_seen;
    EXPECT_EQ(priority_of(node), compute) << "kernel node " << kernels_seen;
  }
  EXPECT_EQ(kernels_seen, 3) << "the captured scale and the two replaced memsets";
}

}  // namespace
}  // namespace sb::cuda
