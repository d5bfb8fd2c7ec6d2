// Replaces the memset nodes of a captured CUDA graph with kernel nodes that write the same values
// (kernels/memset_node.h says why), keeping every dependency. Call it between the capture and the
// instantiation. Returns how many nodes it replaced; a CUDA error is fatal.
// The new kernel nodes run at `priority`, that of the stream the memsets were captured from (captured
// kernels keep their stream's, and a graph instantiated with cudaGraphInstantiateFlagUseNodePriority runs
// each node at its own): at CUDA's default instead, a memset of the step would queue behind the input
// decoding's blocks (CudaStream::compute_priority).
#pragma once
#include <cuda_runtime_api.h>

namespace sb::cuda {

int replace_memset_nodes(cudaGraph_t graph, int priority);

}  // namespace sb::cuda
