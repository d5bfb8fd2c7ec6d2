#include "train/engines/cuda/graph_memsets.h"

#include <vector>

#include "core/cuda_check.h"
#include "kernels/memset_node.h"

namespace sb::cuda {
namespace {

std::vector<cudaGraphNode_t> graph_nodes(cudaGraph_t graph) {
  size_t count = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) CHECK_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
  nodes.resize(count);
  return nodes;
}

// A node's dependencies or its dependents (the two queries share one signature).
using EdgeQuery = cudaError_t (*)(cudaGraphNode_t, cudaGraphNode_t*, cudaGraphEdgeData*, size_t*);
std::vector<cudaGraphNode_t> neighbours(cudaGraphNode_t node, EdgeQuery query) {
  size_t count = 0;
  CHECK_CUDA(query(node, nullptr, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) CHECK_CUDA(query(node, nodes.data(), nullptr, &count));
  nodes.resize(count);
  return nodes;
}

}  // namespace

int replace_memset_nodes(cudaGraph_t graph, int priority) {
  cudaKernelNodeAttrValue at_priority{};
  at_priority.priority = priority;
  int replaced = 0;
  for (cudaGraphNode_t node : graph_nodes(graph)) {
    cudaGraphNodeType type{};
    CHECK_CUDA(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeMemset) continue;
    cudaMemsetParams memset{};
    CHECK_CUDA(cudaGraphMemsetNodeGetParams(node, &memset));
    kernels::MemsetKernelArgs args{};
    const cudaKernelNodeParams params = kernels::memset_kernel_params(memset, args);
    const std::vector<cudaGraphNode_t> before = neighbours(node, &cudaGraphNodeGetDependencies);
    const std::vector<cudaGraphNode_t> after = neighbours(node, &cudaGraphNodeGetDependentNodes);
    cudaGraphNode_t kernel = nullptr;
    CHECK_CUDA(cudaGraphAddKernelNode(&kernel, graph, before.data(), before.size(), &params));
    CHECK_CUDA(cudaGraphKernelNodeSetAttribute(kernel, cudaLaunchAttributePriority, &at_priority));
    for (cudaGraphNode_t next : after) CHECK_CUDA(cudaGraphAddDependencies(graph, &kernel, &next, nullptr, 1));
    CHECK_CUDA(cudaGraphDestroyNode(node));
    ++replaced;
  }
  return replaced;
}

}  // namespace sb::cuda
