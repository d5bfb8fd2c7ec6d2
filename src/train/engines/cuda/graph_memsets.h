// Replaces the memset nodes of a captured CUDA graph with kernel nodes that write the same values
// (kernels/memset_node.h says why), keeping every dependency. Call it between the capture and the
// instantiation. Returns how many nodes it replaced; a CUDA error is fatal.
#pragma once
#include <cuda_runtime_api.h>

namespace sb::cuda {

int replace_memset_nodes(cudaGraph_t graph);

}  // namespace sb::cuda
